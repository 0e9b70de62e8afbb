// Command benchreport is the arithmetic of scripts/bench, which only
// starts processes and runs h2load: it turns each h2load run into a row of
// results.tsv, and the rows into the medians, the per-round paired ratios
// and the tables of the report, with the statistics of the A/B verdict
// (proxy/ab/stats). It is not part of pollproxy.
//
//	benchreport row -round R -proxy P -cell C -requests N -exit RC -cpu-ns NS -wall-us US -load L
//	                [-syscalls N] [-origin-conns N] [-threads-before FILE -threads-after FILE] H2LOAD.LOG
//	benchreport counters -proxy P -requests N PROXY.LOG
//	benchreport report [-rounds N] [-requests N] [-chart FILE] DIR
//
// row prints the run's line of results.tsv on stdout, and on stderr the
// progress line scripts/bench shows with a warning for a suspect run.
// -syscalls is the proxy's system calls across the run, when they were
// counted; -origin-conns the proxy's connections to the origin at the end
// of the run, when they were counted; -threads-before and -threads-after are its threads as
// scripts/bench read them from /proc before and after the run (one a line:
// TID, run time in ns, voluntary and involuntary context switches), from
// which the row takes its context switches and wake-ups (threads.go).
// counters prints a pollproxy's loop counters (its --stats lines) and the
// same per request. report reads DIR/results.tsv and writes DIR/median.tsv,
// DIR/paired.tsv, DIR/counts.tsv and DIR/table.md (and, with -chart,
// gnuplot's data for req/s to FILE and for µs per request to FILE.us); the
// proxies and cells keep the order the matrix ran them in, so a
// results.tsv of an earlier run gives its report again.
//
// One job per file:
//
//   - main.go: the subcommands and their flags.
//   - h2load.go: one h2load run's summary read, and the row made of it.
//   - results.go: results.tsv, its columns and rows.
//   - threads.go: the proxy's threads before and after a run, and the
//     context switches and wake-ups between them.
//   - counters.go: the counters subcommand, a pollproxy's --stats lines.
//   - report.go: the report: medians, paired ratios, counts and the
//     tables, against the anchor proxies.
package main
