package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// cellRun is what scripts/bench knows of one h2load run besides h2load's
// own output: which run it was, the proxy's CPU time across it and how
// long it took.
type cellRun struct {
	round, proxy, cell string
	requests           string    // h2load -n, as given
	exit               int       // h2load's exit status (124: timed out)
	cpuNs              int64     // proxy CPU time across the run
	wallUs             int64     // the run's wall-clock time
	load               string    // the 1-minute load average at its end
	syscalls           *int64    // the proxy's system calls across the run, nil: not counted
	sw                 *switches // its context switches, nil: not read
	originConns        *int      // its connections to the origin at the end, nil: not counted
}

// h2loadOutput holds the lines of h2load's summary the row quotes; each is
// empty when h2load printed no such line (it was killed, or failed to
// connect).
type h2loadOutput struct {
	reqS                       string // "finished in 207.80ms, 9624.78 req/s, ..."
	succeeded, failed, errored string // "requests: N total, ..., N succeeded, N failed, N errored, ..."
	status2xx                  string // "status codes: N 2xx, ..."
	meanLatency                string // the mean column of "time for request:"
	protocol, cipher           string
}

func parseH2load(r io.Reader) (h2loadOutput, error) {
	var o h2loadOutput
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		at := func(i int) string {
			if i < len(f) {
				return f[i]
			}
			return ""
		}
		switch {
		case strings.HasPrefix(line, "finished in"):
			o.reqS = at(3)
		case strings.HasPrefix(line, "requests:"):
			o.succeeded, o.failed, o.errored = at(7), at(9), at(11)
		case strings.HasPrefix(line, "status codes:"):
			o.status2xx = at(2)
		case strings.HasPrefix(line, "time for request:"):
			// min, max, mean, sd, +/- sd after the three words
			o.meanLatency = at(5)
		case strings.HasPrefix(line, "Application protocol:"):
			o.protocol = at(2)
		case strings.HasPrefix(line, "Cipher:"):
			o.cipher = at(1)
		}
	}
	return o, sc.Err()
}

// count is an h2load count, 0 when h2load did not print it.
func count(s string) int64 {
	v, _ := strconv.ParseInt(s, 10, 64)
	return v
}

// orDash is s, or "-" when h2load did not print it.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// row is the run's line of results.tsv (see resultsHeader), without the
// newline.
func row(c cellRun, o h2loadOutput) string {
	ok := count(o.succeeded)
	cpuS := float64(c.cpuNs) / 1e9
	wallS := float64(c.wallUs) / 1e6
	us, pct := "-", "-"
	if ok > 0 {
		us = fmt.Sprintf("%.1f", cpuS*1e6/float64(ok))
	}
	if wallS > 0 {
		pct = fmt.Sprintf("%.0f", 100*cpuS/wallS)
	}
	proto := o.protocol
	if proto == "" {
		proto = "none"
	}
	sys, vol, invol, wake := "-", "-", "-", "-"
	if c.syscalls != nil {
		sys = strconv.FormatInt(*c.syscalls, 10)
	}
	if c.sw != nil {
		vol, invol, wake = strconv.FormatInt(c.sw.vol, 10), strconv.FormatInt(c.sw.invol, 10), strconv.FormatInt(c.sw.wakeups, 10)
	}
	conns := "-"
	if c.originConns != nil {
		conns = strconv.Itoa(*c.originConns)
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%.0f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s",
		c.round, c.proxy, c.cell, c.requests, ok, count(o.failed), count(o.errored), count(o.status2xx),
		num(o.reqS), cpuS, wallS, us, pct, orDash(o.meanLatency), proto, orDash(o.cipher), c.load,
		sys, vol, invol, wake, conns)
}

// perRequest is a count of a run divided by its requests that succeeded,
// as the progress line and the report print it; "-" when either is not
// there.
func perRequest(count, succeeded string) string {
	c, errC := strconv.ParseFloat(count, 64)
	n, errN := strconv.ParseFloat(succeeded, 64)
	if errC != nil || errN != nil || n <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", c/n)
}

// progress is the line scripts/bench prints for each run as it goes, with
// a warning after it for each thing that makes the run suspect; logPath
// is the h2load log the warnings point to.
func progress(w io.Writer, c cellRun, o h2loadOutput, logPath string) {
	f := strings.Split(row(c, o), "\t")
	counts := ""
	if c.sw != nil {
		counts = fmt.Sprintf("  per request: switches %s vol %s invol, wake-ups %s", perRequest(f[18], f[4]), perRequest(f[19], f[4]), perRequest(f[20], f[4]))
		if c.syscalls != nil {
			counts += ", system calls " + perRequest(f[17], f[4])
		}
	}
	fmt.Fprintf(w, "bench: round %s %-16s %-9s %7s req/s %6s us/req  cpu %s%%  ok %s failed %s errored %s  %s  load %s%s\n",
		f[0], f[1], f[2], f[8], f[11], f[12], f[4], f[5], f[6], f[14], f[16], counts)
	want := "h2"
	if strings.HasPrefix(c.cell, "h1") {
		want = "http/1.1"
	}
	if f[14] != want {
		fmt.Fprintf(w, "bench: WARNING: %s %s negotiated '%s', not %s (log: %s)\n", c.proxy, c.cell, f[14], want, logPath)
	}
	if c.exit != 0 {
		fmt.Fprintf(w, "bench: WARNING: %s %s: h2load exit %d (log: %s)\n", c.proxy, c.cell, c.exit, logPath)
	}
	if f[5] != "0" || f[6] != "0" {
		fmt.Fprintf(w, "bench: WARNING: %s %s had failed or errored requests (log: %s)\n", c.proxy, c.cell, logPath)
	}
}
