package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// gauges are the pollproxy_* gauges of one /metrics scrape: each series
// (name and labels) with its value, and the name of each series.
type gauges struct {
	value map[string]float64
	name  map[string]string
}

// notCounts are the gauges that count no live thing (a constant, a ratio
// since start, a limit): never expected back at 0.
var notCounts = map[string]bool{
	"pollproxy_build_info":             true,
	"pollproxy_upstream_reuse_ratio":   true,
	"pollproxy_h2_window_budget_bytes": true,
}

// atStart are counts that are not 0 at rest (a loop's listeners, its own
// timers): summed over their series, since a poller switch relabels them,
// they must be back where they started.
var atStart = map[string]bool{
	"pollproxy_loop_descriptors": true,
	"pollproxy_loop_timers":      true,
}

// parseGauges reads the pollproxy_* gauges of a Prometheus text exposition.
func parseGauges(in io.Reader) (gauges, error) {
	g := gauges{value: map[string]float64{}, name: map[string]string{}}
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
		g.value[series], g.name[series] = v, name
	}
	return g, sc.Err()
}

func (g gauges) sum(name string) float64 {
	var total float64
	for s, v := range g.value {
		if g.name[s] == name {
			total += v
		}
	}
	return total
}

// notAtRest lists what is not at rest compared with start: a series of a
// counting gauge not at 0, a summed one not where it started.
func (g gauges) notAtRest(start gauges) []string {
	var bad []string
	for s, v := range g.value {
		if name := g.name[s]; !notCounts[name] && !atStart[name] && v != 0 {
			bad = append(bad, fmt.Sprintf("%s %v", s, v))
		}
	}
	for name := range atStart {
		if now, was := g.sum(name), start.sum(name); now != was {
			bad = append(bad, fmt.Sprintf("%s summed %v, %v at the start", name, now, was))
		}
	}
	sort.Strings(bad)
	return bad
}

// scraper reads the admin listener's /metrics, a new connection each
// time so that none of pollproxy's descriptors is the scraper's between
// two reads. The admin listener checks Host: it is the listener's own
// address.
type scraper struct {
	admin  string // 127.0.0.1:PORT
	client *http.Client
}

func newScraper(admin string) *scraper {
	return &scraper{admin: admin, client: &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true},
		Timeout:   5 * time.Second,
	}}
}

// text is the whole exposition.
func (s *scraper) text() (string, error) {
	resp, err := s.client.Get("http://" + s.admin + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return string(b), err
}

func (s *scraper) gauges() (gauges, error) {
	t, err := s.text()
	if err != nil {
		return gauges{}, err
	}
	return parseGauges(strings.NewReader(t))
}

// rssKiB is VmRSS of pid.
func rssKiB(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, isRSS := strings.CutPrefix(line, "VmRSS:"); isRSS {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// descriptors is how many descriptors pid holds.
func descriptors(pid int) (int, error) {
	d, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(d), err
}
