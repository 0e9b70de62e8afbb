package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// threadSample is one thread of a proxy at one moment, as scripts/bench
// reads it from /proc/PID/task/TID: the run time the scheduler has given
// it (schedstat) and its voluntary and involuntary context switches
// (status).
type threadSample struct {
	runNs, vol, invol int64
}

// readThreads reads a snapshot scripts/bench wrote: one thread a line,
// "TID RUN_NS VOLUNTARY INVOLUNTARY".
func readThreads(path string) (map[string]threadSample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseThreads(f, path)
}

func parseThreads(r io.Reader, name string) (map[string]threadSample, error) {
	out := map[string]threadSample{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 4 {
			return nil, fmt.Errorf("%s:%d: want TID RUN_NS VOLUNTARY INVOLUNTARY", name, line)
		}
		var v [3]int64
		for i := range v {
			x, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, line, err)
			}
			v[i] = x
		}
		out[f[0]] = threadSample{runNs: v[0], vol: v[1], invol: v[2]}
	}
	return out, sc.Err()
}

// switches are a proxy's context switches across one run.
//
// vol and invol are every thread's: a thread that goes to sleep (in its
// poller's wait, on a futex, in nanosleep) switches voluntarily, one that
// the kernel takes the core from involuntarily. wakeups are the voluntary
// switches of the threads other than the busiest one: the busiest is the
// event loop (every proxy is measured with one loop or worker), and each
// sleep of another thread ends a wake-up of it. For pollproxy these are
// the Go runtime's threads (sysmon, the threads a locked loop goroutine
// is handed round, the garbage collector's), for the anchors their helper
// threads, if any.
type switches struct {
	vol, invol, wakeups int64
}

// countSwitches works out the switches between two snapshots of the same
// process. A thread that started in between counts from zero; one that
// ended took its counts with it and counts for nothing.
func countSwitches(before, after map[string]threadSample) switches {
	var s switches
	busiest, most := "", int64(-1)
	for tid, a := range after {
		b := before[tid]
		s.vol += a.vol - b.vol
		s.invol += a.invol - b.invol
		if d := a.runNs - b.runNs; d > most {
			busiest, most = tid, d
		}
	}
	for tid, a := range after {
		if tid != busiest {
			s.wakeups += a.vol - before[tid].vol
		}
	}
	return s
}
