package atrest

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Gauges are the pollproxy_* gauges of one scrape: each series (name and
// labels) with its value, and the metric name of each series.
type Gauges struct {
	Value map[string]float64
	Name  map[string]string
}

// NotCounts are the gauges that count no live thing (a constant, a ratio
// since start, a limit): never expected back at 0.
var NotCounts = map[string]bool{
	"pollproxy_build_info":             true,
	"pollproxy_upstream_reuse_ratio":   true,
	"pollproxy_h2_window_budget_bytes": true,
}

// AtStart are counts that are not 0 at rest (a loop's listeners and its
// own timers): their totals over every series must be back where they
// were before the traffic. A poller switch relabels them, so they are
// compared summed.
var AtStart = map[string]bool{
	"pollproxy_loop_descriptors": true,
	"pollproxy_loop_timers":      true,
}

// Parse reads the pollproxy_* gauges of a Prometheus text exposition.
func Parse(in io.Reader) (Gauges, error) {
	g := Gauges{Value: map[string]float64{}, Name: map[string]string{}}
	isGauge := map[string]bool{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			isGauge[f[2]] = f[3] == "gauge"
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return g, fmt.Errorf("metrics line %q: no value", line)
		}
		series := line[:i]
		name, _, _ := strings.Cut(series, "{")
		if !isGauge[name] || !strings.HasPrefix(name, "pollproxy_") {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return g, fmt.Errorf("metrics line %q: %v", line, err)
		}
		g.Value[series], g.Name[series] = v, name
	}
	return g, sc.Err()
}

// Sum is the total of name's series.
func (g Gauges) Sum(name string) float64 {
	var total float64
	for s, v := range g.Value {
		if g.Name[s] == name {
			total += v
		}
	}
	return total
}

// Series lists name's series with their values.
func (g Gauges) Series(name string) []string {
	var out []string
	for s, v := range g.Value {
		if g.Name[s] == name {
			out = append(out, fmt.Sprintf("%s %v", s, v))
		}
	}
	sort.Strings(out)
	return out
}

// NotAtRest lists what is not at rest compared with start (a scrape
// before the traffic): any series of a counting gauge not at 0, and the
// AtStart ones, summed, not where they started.
func (g Gauges) NotAtRest(start Gauges) []string { return g.offRest(start, false) }

// AboveRest is NotAtRest with the AtStart sums allowed below their start:
// for a start that may still hold what a process's start-up left (a probe
// connection's timer, a descriptor its first reload closes), where only
// more than at the start is a leak.
func (g Gauges) AboveRest(start Gauges) []string { return g.offRest(start, true) }

func (g Gauges) offRest(start Gauges, fewerOK bool) []string {
	var bad []string
	for s, v := range g.Value {
		if name := g.Name[s]; !NotCounts[name] && !AtStart[name] && v != 0 {
			bad = append(bad, fmt.Sprintf("%s %v", s, v))
		}
	}
	for name := range AtStart {
		if now, was := g.Sum(name), start.Sum(name); now > was || now < was && !fewerOK {
			bad = append(bad, fmt.Sprintf("%s summed %v, %v at the start (%v)", name, now, was, g.Series(name)))
		}
	}
	sort.Strings(bad)
	return bad
}
