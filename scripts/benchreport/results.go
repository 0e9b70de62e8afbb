package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// resultsHeader is the first line of results.tsv. Its columns are what
// docs/benchmarks.md refers to; a run's row carries them in this order.
//
// The last four, the proxy's system calls, voluntary and involuntary
// context switches and wake-ups of threads off its loop across the run
// (switches in threads.go), came later, and after them the proxy's
// connections to the origin at the end of the run: a results.tsv without
// them reads as "-", and so does a run that did not count them.
const resultsHeader = "round\tproxy\tcell\trequests\tsucceeded\tfailed\terrored\tstatus2xx\treq_s\tcpu_s\twall_s\tus_per_req\tcpu_pct\tmean_latency\tprotocol\tcipher\tloadavg\tsyscalls\tvol_cs\tinvol_cs\twakeups\torigin_conns"

// warmup is the round name of the runs before the matrix, which no figure
// counts.
const warmup = "warmup"

// run is one row of results.tsv: one bounded h2load run against one proxy
// in one cell. The figures are kept as written (req_s "9625", us "47.7",
// us "-" when nothing succeeded), since the report quotes them.
type run struct {
	round, proxy, cell string
	requests           int    // h2load -n
	succeeded          int    // requests that succeeded
	status2xx          int    // responses with a 2xx status
	reqS, us, cpuPct   string // req/s, µs of proxy CPU per request, % of a core
	// The run's counts, "-" when not counted: system calls, voluntary and
	// involuntary context switches, wake-ups off the loop.
	syscalls, vol, invol, wakeups string
	originConns                   string // connections to the origin at the end, "-": not counted
}

// complete reports whether the run served every request with a 2xx and
// measured a rate: a run that timed out, or had errors or other statuses,
// is left out of the medians and the ratios.
func (r run) complete() bool { return r.status2xx >= r.requests && num(r.reqS) != 0 }

// num is a figure's value, 0 for "-" or anything else that is not a number
// (a run that measured nothing).
func num(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return v
}

// readResults reads results.tsv (header first, one run a line).
func readResults(path string) ([]run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseResults(f, path)
}

func parseResults(r io.Reader, name string) ([]run, error) {
	var runs []run
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		if line == 1 {
			continue
		}
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 13 {
			return nil, fmt.Errorf("%s:%d: %d columns, want those of the header", name, line, len(f))
		}
		col := func(i int) string {
			if i < len(f) {
				return f[i]
			}
			return "-"
		}
		runs = append(runs, run{
			round: f[0], proxy: f[1], cell: f[2],
			requests:  int(num(f[3])),
			succeeded: int(num(f[4])),
			status2xx: int(num(f[7])),
			reqS:      f[8], us: f[11], cpuPct: f[12],
			syscalls: col(17), vol: col(18), invol: col(19), wakeups: col(20),
			originConns: col(21),
		})
	}
	return runs, sc.Err()
}

// order lists the proxies and the cells in the order the matrix ran them
// (round by round, cell by cell, proxy by proxy), which is the order of
// the command line: the table keeps it.
func order(runs []run) (proxies, cells []string) {
	seenP, seenC := map[string]bool{}, map[string]bool{}
	for _, r := range runs {
		if r.round == warmup {
			continue
		}
		if !seenP[r.proxy] {
			seenP[r.proxy] = true
			proxies = append(proxies, r.proxy)
		}
		if !seenC[r.cell] {
			seenC[r.cell] = true
			cells = append(cells, r.cell)
		}
	}
	return proxies, cells
}
