package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/ab/stats"
)

// anchors are the proxies pollproxy is measured against: the best of them
// in a cell is the bar.
var anchors = map[string]bool{"nginx": true, "haproxy": true, "h2o": true}

// median is one line of median.tsv: a proxy's figures in one cell, the
// median over the rounds of its complete runs, as written ("-" when no run
// was complete), and the requests of the runs left out.
type median struct {
	reqS, us, cpuPct string
	failed           int
	// Per request, "-" where no complete run counted them: system calls,
	// voluntary and involuntary context switches, wake-ups off the loop.
	sys, vol, invol, wake string
	// originConns is the proxy's connections to the origin at the end of
	// the cell (median), "-" where not counted.
	originConns string
}

// hasCounts reports whether any of m's counts was measured.
func (m median) hasCounts() bool {
	return m.sys != "-" || m.vol != "-" || m.invol != "-" || m.wake != "-"
}

// medians are the figures of each proxy in each cell: median.tsv.
type medians map[[2]string]median // {proxy, cell}

// get is the figure of proxy in cell, "" when it was not measured.
func (m medians) get(proxy, cell string) (median, bool) {
	v, ok := m[[2]string{proxy, cell}]
	return v, ok
}

func computeMedians(runs []run) medians {
	type samples struct {
		reqS, us, pct         []float64
		sys, vol, invol, wake []float64
		originConns           []float64
		failed                int
	}
	// perReq appends a run's count per request that succeeded, when the
	// run counted it.
	perReq := func(to *[]float64, count string, r run) {
		if c, err := strconv.ParseFloat(count, 64); err == nil && r.succeeded > 0 {
			*to = append(*to, c/float64(r.succeeded))
		}
	}
	all := map[[2]string]*samples{}
	for _, r := range runs {
		if r.round == warmup {
			continue
		}
		k := [2]string{r.proxy, r.cell}
		s := all[k]
		if s == nil {
			s = &samples{}
			all[k] = s
		}
		if !r.complete() {
			s.failed += r.requests - r.status2xx
			continue
		}
		s.reqS = append(s.reqS, num(r.reqS))
		s.us = append(s.us, num(r.us))
		s.pct = append(s.pct, num(r.cpuPct))
		perReq(&s.sys, r.syscalls, r)
		perReq(&s.vol, r.vol, r)
		perReq(&s.invol, r.invol, r)
		perReq(&s.wake, r.wakeups, r)
		if c, err := strconv.ParseFloat(r.originConns, 64); err == nil {
			s.originConns = append(s.originConns, c)
		}
	}
	med := func(x []float64) string {
		if len(x) == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", stats.Median(x))
	}
	m := medians{}
	for k, s := range all {
		v := median{reqS: "-", us: "-", cpuPct: "-", failed: s.failed,
			sys: med(s.sys), vol: med(s.vol), invol: med(s.invol), wake: med(s.wake), originConns: "-"}
		if len(s.originConns) > 0 {
			v.originConns = fmt.Sprintf("%.0f", stats.Median(s.originConns))
		}
		if len(s.reqS) > 0 {
			v.reqS = fmt.Sprintf("%.0f", stats.Median(s.reqS))
			v.us = fmt.Sprintf("%.1f", stats.Median(s.us))
			v.cpuPct = fmt.Sprintf("%.0f", stats.Median(s.pct))
		}
		m[k] = v
	}
	return m
}

// writeMedians writes median.tsv: proxy, cell, req_s, us_per_req, cpu_pct,
// failed, in the table's order.
func writeMedians(w io.Writer, m medians, proxies, cells []string) error {
	for _, p := range proxies {
		for _, c := range cells {
			v, ok := m.get(p, c)
			if !ok {
				continue
			}
			if _, err := fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\n", p, c, v.reqS, v.us, v.cpuPct, v.failed); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeCounts writes counts.tsv: proxy, cell, then per request system
// calls, voluntary and involuntary context switches and wake-ups off the
// loop (medians over the complete runs, "-" where not counted), in the
// table's order.
func writeCounts(w io.Writer, m medians, proxies, cells []string) error {
	for _, p := range proxies {
		for _, c := range cells {
			v, ok := m.get(p, c)
			if !ok {
				continue
			}
			if _, err := fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", p, c, v.sys, v.vol, v.invol, v.wake); err != nil {
				return err
			}
		}
	}
	return nil
}

// pairedRatio is one line of paired.tsv: the ratio of the reference
// pollproxy's µs per request to another proxy's, taken round by round
// between runs seconds apart, and its median and range over the rounds.
//
// A ratio of the medians mixes rounds: the machine's pace drifts from
// round to round, and a proxy measured in a fast round against an anchor
// measured in a slow one makes a ratio that neither round shows. A range
// that spans a target says the target is a tie on this machine.
type pairedRatio struct {
	median, lo, hi float64
	rounds         int
}

func (p pairedRatio) String() string { return fmt.Sprintf("%.2f (%.2f–%.2f)", p.median, p.lo, p.hi) }

// Kinds of paired ratio: to the best anchor of each round, to the
// baseline build of the same poller.
const (
	kindBest = "best"
	kindBase = "base"
)

// pairings are the paired ratios of each cell: paired.tsv.
type pairings map[[2]string]pairedRatio // {cell, kind}

// reference is the pollproxy the ratios are of (the first one named) and
// its baseline twin, "" when there is none.
func reference(proxies []string) (ref, base string) {
	for _, p := range proxies {
		if strings.HasPrefix(p, "pollproxy-") {
			ref = p
			break
		}
	}
	if ref == "" {
		return "", ""
	}
	twin := "baseline-" + strings.TrimPrefix(ref, "pollproxy-")
	for _, p := range proxies {
		if p == twin {
			base = p
		}
	}
	return ref, base
}

func computePaired(runs []run, ref, base string, cells []string) pairings {
	type key struct{ cell, round string }
	refUs, baseUs, bestUs := map[key]float64{}, map[key]float64{}, map[key]float64{}
	var rounds []string
	seenRound := map[string]bool{}
	for _, r := range runs {
		if r.round == warmup || !r.complete() {
			continue
		}
		if !seenRound[r.round] {
			seenRound[r.round] = true
			rounds = append(rounds, r.round)
		}
		k, us := key{r.cell, r.round}, num(r.us)
		switch {
		case r.proxy == ref:
			refUs[k] = us
		case r.proxy == base:
			baseUs[k] = us
		case anchors[r.proxy]:
			if b, ok := bestUs[k]; !ok || us < b {
				bestUs[k] = us
			}
		}
	}
	p := pairings{}
	for _, c := range cells {
		for _, kind := range []string{kindBest, kindBase} {
			other := bestUs
			if kind == kindBase {
				other = baseUs
			}
			var ratios []float64
			for _, rd := range rounds {
				k := key{c, rd}
				x, y := refUs[k], other[k]
				if x > 0 && y > 0 {
					ratios = append(ratios, x/y)
				}
			}
			if len(ratios) > 0 {
				p[[2]string{c, kind}] = pairedRatio{
					median: stats.Median(ratios),
					lo:     stats.Quantile(ratios, 0),
					hi:     stats.Quantile(ratios, 1),
					rounds: len(ratios),
				}
			}
		}
	}
	return p
}

// writePaired writes paired.tsv: cell, kind, median, min, max, rounds.
func writePaired(w io.Writer, p pairings, cells []string) error {
	for _, c := range cells {
		for _, kind := range []string{kindBest, kindBase} {
			v, ok := p[[2]string{c, kind}]
			if !ok {
				continue
			}
			if _, err := fmt.Fprintf(w, "%s\t%s\t%.2f\t%.2f\t%.2f\t%d\n", c, kind, v.median, v.lo, v.hi, v.rounds); err != nil {
				return err
			}
		}
	}
	return nil
}

// label is how the table names a cell: h2:6:20 is "h2 -c 6 -m 20", h1u:6
// "h1 -c 6 unix" (the origin over a unix socket), h2s:6:20 "h2 -c 6 -m 20
// tls" (the origin over TLS), h2c:6:20 "h2 -c 6 -m 20 h2c" (the origin
// over cleartext HTTP/2), grpc:6:20 "grpc unary -c 6 -m 20" and grpcs:6:20
// "grpc stream -c 6 -m 20" (gRPC calls to a gRPC origin over h2c).
func label(cell string) string {
	f := strings.Split(cell, ":")
	s := ""
	switch f[0] {
	case "h2c":
		if len(f) == 3 {
			return "h2 -c " + f[1] + " -m " + f[2] + " h2c"
		}
	case "grpc", "grpcs":
		if len(f) == 3 {
			kind := "unary"
			if f[0] == "grpcs" {
				kind = "stream"
			}
			return "grpc " + kind + " -c " + f[1] + " -m " + f[2]
		}
	case "h2", "h2u", "h2s":
		if len(f) == 3 {
			s = "h2 -c " + f[1] + " -m " + f[2]
		}
	case "h1", "h1u", "h1s":
		if len(f) == 2 {
			s = "h1 -c " + f[1]
		}
	}
	switch {
	case s == "":
	case strings.HasSuffix(f[0], "u"):
		s += " unix"
	case strings.HasSuffix(f[0], "s"):
		s += " tls"
	}
	return s
}

// ratio is x/y of two figures as the table prints them, "-" when either
// was not measured or y is not positive.
func ratio(x, y string) string {
	a, errA := strconv.ParseFloat(x, 64)
	b, errB := strconv.ParseFloat(y, 64)
	if errA != nil || errB != nil || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// table is the report: table.md. The ratios of medians are taken of the
// figures as median.tsv rounds them, so that a reader can redo them from
// the table.
type table struct {
	rounds, requests string
	proxies, cells   []string
	m                medians
	p                pairings
}

func (t table) write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "req/s and µs of proxy CPU per request (median of %s round(s), -n %s per cell; \"(N failed)\": requests of runs left out, see results.tsv)\n\n", t.rounds, t.requests)
	ref, base := reference(t.proxies)
	hasNginx := false
	var anch []string
	for _, p := range t.proxies {
		hasNginx = hasNginx || p == "nginx"
		if anchors[p] {
			anch = append(anch, p)
		}
	}
	withNginx := ref != "" && hasNginx
	withBest := ref != "" && len(anch) > 1
	withBase := base != ""

	hdr, sep := "| cell |", "|---|"
	for _, p := range t.proxies {
		hdr += fmt.Sprintf(" %s req/s | %s µs/req |", p, p)
		sep += "---:|---:|"
	}
	if withNginx {
		hdr += fmt.Sprintf(" %s/nginx req/s | %s/nginx µs/req |", ref, ref)
		sep += "---:|---:|"
	}
	if withBest {
		hdr += fmt.Sprintf(" best anchor µs/req | %s/best µs/req | %s/best per round: median (range) |", ref, ref)
		sep += "---|---:|---:|"
	}
	if withBase {
		hdr += fmt.Sprintf(" %s/%s µs/req | %s/%s per round: median (range) |", ref, base, ref, base)
		sep += "---:|---:|"
	}
	b.WriteString(hdr + "\n" + sep + "\n")
	pairedCol := func(cell, kind string) string {
		if v, ok := t.p[[2]string{cell, kind}]; ok {
			return " " + v.String() + " |"
		}
		return "  |"
	}
	for _, c := range t.cells {
		line := "| " + label(c) + " |"
		for _, p := range t.proxies {
			v, _ := t.m.get(p, c)
			mark := ""
			if v.failed != 0 {
				mark = fmt.Sprintf(" (%d failed)", v.failed)
			}
			line += fmt.Sprintf(" %s%s | %s |", v.reqS, mark, v.us)
		}
		r, _ := t.m.get(ref, c)
		if withNginx {
			n, _ := t.m.get("nginx", c)
			line += fmt.Sprintf(" %s | %s |", ratio(r.reqS, n.reqS), ratio(r.us, n.us))
		}
		if withBest {
			best, bestUs, bestV := "", "", 0.0
			for _, a := range anch {
				v, _ := t.m.get(a, c)
				x, err := strconv.ParseFloat(v.us, 64)
				if err != nil {
					continue
				}
				if best == "" || x < bestV {
					best, bestUs, bestV = a, v.us, x
				}
			}
			line += fmt.Sprintf(" %s %s | %s |", best, bestUs, ratio(r.us, bestUs))
			line += pairedCol(c, kindBest)
		}
		if withBase {
			bv, _ := t.m.get(base, c)
			line += fmt.Sprintf(" %s |", ratio(r.us, bv.us))
			line += pairedCol(c, kindBase)
		}
		b.WriteString(line + "\n")
	}
	t.writeCounts(&b)
	t.writeOriginConns(&b)
	b.WriteString("\nproxy core busy (% of one core, median):\n\n")
	t.writeProxyTable(&b, func(v median) string { return v.cpuPct + "%" })
	_, err := io.WriteString(w, b.String())
	return err
}

// writeCounts adds the table of counts per request, when the runs have
// any: what a request costs besides CPU time, the same for every proxy.
func (t table) writeCounts(b *strings.Builder) {
	counted := false
	for _, v := range t.m {
		counted = counted || v.hasCounts()
	}
	if !counted {
		return
	}
	b.WriteString("\nper request (median): system calls / context switches, voluntary / involuntary / wake-ups off the loop " +
		"(voluntary switches of the threads other than the busiest one; for pollproxy the Go runtime's); \"-\": not counted\n\n")
	t.writeProxyTable(b, func(v median) string { return fmt.Sprintf("%s / %s / %s / %s", v.sys, v.vol, v.invol, v.wake) })
}

// writeOriginConns adds the table of the connections each proxy held to
// the origin at the end of each cell, when the runs counted them: how many
// client streams share an origin connection.
func (t table) writeOriginConns(b *strings.Builder) {
	counted := false
	for _, v := range t.m {
		counted = counted || v.originConns != "-" && v.originConns != ""
	}
	if !counted {
		return
	}
	b.WriteString("\nconnections to the origin at the end of the cell (median; established TCP connections of the proxy to the origin's port)\n\n")
	t.writeProxyTable(b, func(v median) string { return v.originConns })
}

// writeProxyTable adds a table with a row per cell and a column per
// proxy, each entry what pick makes of the proxy's medians in the cell
// (empty where the proxy did not run it).
func (t table) writeProxyTable(b *strings.Builder, pick func(median) string) {
	hdr, sep := "| cell |", "|---|"
	for _, p := range t.proxies {
		hdr += " " + p + " |"
		sep += "---:|"
	}
	b.WriteString(hdr + "\n" + sep + "\n")
	for _, c := range t.cells {
		line := "| " + label(c) + " |"
		for _, p := range t.proxies {
			v, ok := t.m.get(p, c)
			if !ok {
				line += " |"
				continue
			}
			line += " " + pick(v) + " |"
		}
		b.WriteString(line + "\n")
	}
}

// writeChart writes gnuplot's data for one of the chart's two plots: a
// column per proxy, a row per cell, the figure pick chooses.
func writeChart(w io.Writer, t table, pick func(median) string) error {
	var b strings.Builder
	b.WriteString("cell")
	for _, p := range t.proxies {
		b.WriteString("\t" + p)
	}
	b.WriteString("\n")
	for _, c := range t.cells {
		fmt.Fprintf(&b, "%q", label(c))
		for _, p := range t.proxies {
			v, _ := t.m.get(p, c)
			b.WriteString("\t" + pick(v))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// newTable computes the report of runs: the proxies and cells in the
// order they ran, the medians, the paired ratios, and the rounds and
// requests the results show.
func newTable(runs []run) table {
	t := table{}
	t.proxies, t.cells = order(runs)
	t.m = computeMedians(runs)
	ref, base := reference(t.proxies)
	t.p = computePaired(runs, ref, base, t.cells)
	rounds := map[string]bool{}
	for _, r := range runs {
		if r.round == warmup {
			continue
		}
		if t.requests == "" {
			t.requests = strconv.Itoa(r.requests)
		}
		rounds[r.round] = true
	}
	t.rounds = strconv.Itoa(len(rounds))
	return t
}
