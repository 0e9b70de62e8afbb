// Package ab is pollproxy's built-in A/B comparison of poller backends.
//
// The loops of one process are split between pollers (poller epoll poll);
// every interval (ab_interval, 10 s by default) a Sampler turns each
// loop's counters — its thread's CPU time (netpoll.Loop.CPU), its poller
// counters and its latency histogram (a Histogram only that loop writes) —
// into one Sample per poller group: requests, loop CPU per request, p50
// and p99 latency, poller waits and events per request, descriptors.
// Judge compares the groups' samples with the statistics of package
// ab/stats and Handler serves the result as /ab (HTML with SVG charts) and
// /ab.json on the admin listener.
//
// Nothing here runs on a loop except what the loop already does: the
// histogram's Record (from the metrics observer) and the CPU refresh the
// sampler posts once per interval.
//
// One job per file:
//
//   - sampler.go: the Sampler, its Sample of one poller group over one
//     interval, and the history with its Marks (such as a poller switch).
//   - hist.go: a loop's latency Histogram, log-linear in microseconds.
//   - process.go: Process, the whole process's figures over one interval;
//     rss_linux.go, rss_other.go: its resident set, from /proc/self/statm
//     on Linux.
//   - judge.go: the verdict: the Metrics compared, each one's Result
//     against the baseline group, and the load-balance check.
//   - rotate.go: the crossover design: every loop rotated between the two
//     pollers on a schedule, and each loop's Periods on one poller.
//   - crossover.go: the crossover's judge, each loop compared with itself
//     over slots of three periods.
//   - compare.go: two instances compared (a canary) by their Process
//     intervals.
//   - http.go: the /ab and /ab.json handlers; csv.go: the history, the
//     periods and the process intervals as CSV (/ab.csv).
//   - page.go: the /ab HTML page with its SVG charts; text.go: the verdict
//     and a canary's comparison printed for a terminal.
package ab
