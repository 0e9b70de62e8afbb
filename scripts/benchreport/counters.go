package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// counters writes the loop counters a pollproxy printed on exit (its
// --stats lines, "loop N BACKEND: waits=... events=... adds=..."), read
// from its log, and the same per request: how often a request makes the
// loop touch the poller. requests is how many went through it, warm-up
// included.
func counters(w io.Writer, proxy string, requests int64, log io.Reader) error {
	var lines []string
	vals := map[string]float64{}
	sc := bufio.NewScanner(log)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "loop ") {
			continue
		}
		lines = append(lines, line)
		// With several loops the last one's figures are taken, as the
		// benchmark runs one loop.
		for _, f := range strings.Fields(line) {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				continue
			}
			if x, err := strconv.ParseFloat(v, 64); err == nil {
				vals[k] = x
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d requests through it (warm-up included)\n", proxy, requests)
	if len(lines) == 0 {
		b.WriteString("(no --stats lines: see its log)\n")
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	if len(lines) > 0 && requests > 0 {
		n := float64(requests)
		fmt.Fprintf(&b, "per request: adds %.5f mods %.5f dels %.5f waits %.3f", vals["adds"]/n, vals["mods"]/n, vals["dels"]/n, vals["waits"]/n)
		if c, ok := vals["calls"]; ok { // a build before the loop counted its poller's calls has none
			fmt.Fprintf(&b, " poller calls %.3f", c/n)
		}
		fmt.Fprintf(&b, " events %.3f", vals["events"]/n)
		if y, ok := vals["yields"]; ok { // passes through the Go scheduler (netpoll/yield.go), since they were counted
			fmt.Fprintf(&b, " yields %.4f", y/n)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
