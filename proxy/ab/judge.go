package ab

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/ab/stats"
)

// Level is the confidence level of every interval in a verdict.
const Level = 0.95

// Power is the chance of detecting an effect that "more intervals needed"
// is computed for.
const Power = 0.8

// DefaultEffect is the relative difference the verdict asks "how many
// intervals would resolve it" for, when the caller names none: 2%.
const DefaultEffect = 0.02

// Imbalance beyond which the load-balance check warns: one group serving
// more than 1.5 times the requests per loop of another.
const maxImbalance = 1.5

// Metric is one figure the verdict compares.
type Metric struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
	get  func(*Sample) float64
}

// Metrics are the figures compared, in the verdict's order. Lower is
// better for all of them.
var Metrics = []Metric{
	{"cpu_per_request", "µs", func(s *Sample) float64 { return s.CPUPerRequest }},
	{"p50", "µs", func(s *Sample) float64 { return s.P50 }},
	{"p99", "µs", func(s *Sample) float64 { return s.P99 }},
	{"waits_per_request", "", func(s *Sample) float64 { return s.WaitsPerRequest }},
	{"events_per_request", "", func(s *Sample) float64 { return s.EventsPerRequest }},
}

// Result compares one metric of a candidate group with the baseline.
type Result struct {
	Metric string  `json:"metric"`
	Unit   string  `json:"unit"`
	Base   float64 `json:"baseline_median"`
	Cand   float64 `json:"candidate_median"`
	// Shift is the estimate of candidate - baseline, in Unit, with its 95%
	// interval [Lo, Hi]: Hodges–Lehmann in the fixed split; in the
	// crossover the relative shift times the baseline's median period.
	Shift float64 `json:"shift"`
	Lo    float64 `json:"shift_lo"`
	Hi    float64 `json:"shift_hi"`
	Rel   float64 `json:"relative"` // Shift / Base
	RelLo float64 `json:"relative_lo"`
	RelHi float64 `json:"relative_hi"`
	P     float64 `json:"p_value,omitempty"` // Mann–Whitney, two-sided; none in the crossover
	// N and M are the baseline's and candidate's intervals (periods in
	// the crossover) with enough requests.
	N      int    `json:"baseline_intervals"`
	M      int    `json:"candidate_intervals"`
	Outl   int    `json:"outliers_dropped"`
	Status string `json:"status"` // "higher", "lower", "no detectable difference", "too few intervals"
	// Needed is about how many intervals per group would resolve the
	// report's Effect at 80% power (in the crossover: how many intervals
	// until the confidence sequence's half-width falls below it); More is
	// how many beyond those used.
	Needed int `json:"intervals_needed"`
	More   int `json:"more_intervals"`
	// Text is the verdict in words.
	Text string `json:"text"`
	// Method says how the interval was made: DesignFixed (Hodges–Lehmann
	// between the groups' intervals, a fixed-sample interval) or
	// DesignCrossover (a confidence sequence of each loop's paired
	// differences, valid whenever read).
	Method string `json:"method"`
	// Observations are the crossover's slots the interval rests on.
	Observations int `json:"observations,omitempty"`
}

// Comparison is one candidate group against the baseline.
type Comparison struct {
	Baseline  string   `json:"baseline"`
	Candidate string   `json:"candidate"`
	Results   []Result `json:"results"`
}

// Group is one poller group's totals over the history.
type Group struct {
	Name      string  `json:"name"`
	Poller    string  `json:"poller"`
	Loops     int     `json:"loops"`
	Requests  uint64  `json:"requests"`
	Share     float64 `json:"share"`             // of all requests
	PerLoop   float64 `json:"requests_per_loop"` // requests per loop per second, over busy intervals
	Intervals int     `json:"intervals"`         // with at least MinRequests requests
	Idle      int     `json:"idle_intervals"`    // with fewer, left out
}

// Check is one of the things a careful reader verifies before trusting
// the verdict.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Report is the whole verdict, as /ab.json serves it.
type Report struct {
	Generated time.Time `json:"generated"`
	// Design is what produced the verdict: DesignCrossover or DesignFixed.
	Design string `json:"design"`
	// Rotation is the crossover's period in seconds (0 in a fixed split).
	Rotation    float64      `json:"rotation_seconds,omitempty"`
	Interval    float64      `json:"interval_seconds"`
	Intervals   int          `json:"intervals"` // intervals in the history
	Effect      float64      `json:"effect"`    // the relative effect More is computed for
	ThreadCPU   bool         `json:"thread_cpu"`
	Groups      []Group      `json:"groups"`
	Comparisons []Comparison `json:"comparisons"`
	Checks      []Check      `json:"checks"`
	Marks       []Mark       `json:"marks"`
	Samples     []Sample     `json:"samples"`
	// Periods are the crossover's loop periods, oldest first.
	Periods []Period `json:"periods,omitempty"`
	// Backends are the loops' pollers when the report was made, one per
	// loop, and Process the whole process's intervals: what Compare
	// judges two instances by.
	Backends []string  `json:"backends,omitempty"`
	Process  []Process `json:"process,omitempty"`
}

// Judge builds the report from a sampler's history. effect <= 0 means
// DefaultEffect. In the crossover design the comparison and checks are the crossover's
// (crossover.go); the groups and samples are still reported, for the
// charts.
func (s *Sampler) Judge(effect float64) *Report {
	samples, marks := s.History()
	r := Judge(samples, marks, s.interval, effect)
	r.Process = s.Process()
	if s.group != nil {
		r.Backends = s.group.Backends()
	}
	s.mu.Lock()
	every, pollers := s.cross.every, s.pollers
	periods := append([]Period(nil), s.cross.periods...)
	s.mu.Unlock()
	if every == 0 {
		return r
	}
	names := [2]string{pollers[0], pollers[1]}
	if names[0] == names[1] {
		names = [2]string{names[0] + "#1", names[1] + "#2"}
	}
	r.Design, r.Rotation = DesignCrossover, (time.Duration(every) * s.interval).Seconds()
	if len(samples) > 0 {
		// Washout intervals have no samples; they were intervals all the same.
		r.Intervals = samples[len(samples)-1].Interval - samples[0].Interval + 1
	}
	r.Comparisons = []Comparison{crossoverCompare(periods, names, every, r.Effect)}
	// The verdict rests on every period kept; the report carries those
	// of the samples' window, as the charts show them.
	first := 0
	if len(samples) > 0 {
		first = samples[0].Interval
	}
	for _, p := range periods {
		if p.Interval >= first {
			r.Periods = append(r.Periods, p)
		}
	}
	r.Checks = crossoverChecks(r, s.interval, every)
	if len(r.Marks) > 0 {
		r.Checks = append(r.Checks, marksCheck(r.Marks))
	}
	return r
}

// Judge compares the groups in samples: the first group in name order is
// the baseline ("epoll" before "poll", "epoll#1" before "epoll#2"), every
// other group a candidate.
func Judge(samples []Sample, marks []Mark, interval time.Duration, effect float64) *Report {
	if effect <= 0 {
		effect = DefaultEffect
	}
	r := &Report{Generated: time.Now(), Design: DesignFixed, Interval: interval.Seconds(), Effect: effect,
		ThreadCPU: netpoll.ThreadCPUSupported, Marks: marks, Samples: samples}
	byGroup := map[string][]Sample{}
	var order []string
	var total uint64
	seen := map[int]bool{}
	for _, smp := range samples {
		if !seen[smp.Interval] {
			seen[smp.Interval] = true
			r.Intervals++
		}
		if byGroup[smp.Group] == nil {
			order = append(order, smp.Group)
		}
		byGroup[smp.Group] = append(byGroup[smp.Group], smp)
		total += smp.Requests
	}
	sort.Strings(order)
	for _, name := range order {
		g := Group{Name: name}
		var loopSecs float64
		var busy uint64
		for _, smp := range byGroup[name] {
			g.Poller, g.Loops = smp.Poller, smp.Loops
			g.Requests += smp.Requests
			if smp.Requests < MinRequests {
				g.Idle++
				continue
			}
			// The rate is over busy intervals, as the verdict is: idle
			// time would dilute the imbalance.
			g.Intervals++
			busy += smp.Requests
			loopSecs += smp.Seconds * float64(smp.Loops)
		}
		if total > 0 {
			g.Share = float64(g.Requests) / float64(total)
		}
		if loopSecs > 0 {
			g.PerLoop = float64(busy) / loopSecs
		}
		r.Groups = append(r.Groups, g)
	}
	for i := 1; i < len(order); i++ {
		r.Comparisons = append(r.Comparisons, compare(order[0], order[i], byGroup, effect))
	}
	r.Checks = checks(r, interval)
	return r
}

func compare(base, cand string, byGroup map[string][]Sample, effect float64) Comparison {
	c := Comparison{Baseline: base, Candidate: cand}
	for _, m := range Metrics {
		if m.Name == "cpu_per_request" && !netpoll.ThreadCPUSupported {
			continue
		}
		c.Results = append(c.Results, compareMetric(m, cand, byGroup[base], byGroup[cand], effect))
	}
	return c
}

func values(m Metric, ss []Sample) []float64 {
	var v []float64
	for i := range ss {
		if ss[i].Requests >= MinRequests {
			v = append(v, m.get(&ss[i]))
		}
	}
	return v
}

func compareMetric(m Metric, candName string, base, cand []Sample, effect float64) Result {
	a, da := stats.RemoveOutliers(values(m, base), stats.DefaultIQRFactor)
	b, db := stats.RemoveOutliers(values(m, cand), stats.DefaultIQRFactor)
	res := Result{Metric: m.Name, Unit: m.Unit, N: len(a), M: len(b), Outl: da + db, Method: DesignFixed,
		Base: stats.Median(a), Cand: stats.Median(b)}
	if len(a) < 2 || len(b) < 2 {
		res.Status = "too few intervals"
		res.Base, res.Cand = nanZero(res.Base), nanZero(res.Cand)
		res.Text = fmt.Sprintf("too few intervals (%d and %d with ≥%d requests; want %d each)", len(a), len(b), MinRequests, stats.MinSamples)
		return res
	}
	sh, _ := stats.HodgesLehmann(a, b, Level)
	mw, _ := stats.MannWhitneyU(a, b)
	res.Shift, res.Lo, res.Hi, res.P = sh.Estimate, sh.Lo, sh.Hi, mw.P
	if res.Base != 0 {
		res.Rel, res.RelLo, res.RelHi = sh.Estimate/res.Base, sh.Lo/res.Base, sh.Hi/res.Base
	}
	n := min(len(a), len(b))
	res.Needed = stats.IntervalsFor(sh.HalfWidth(), n, effect*res.Base, Level, Power)
	if res.Needed > n {
		res.More = res.Needed - n
	}
	res.decide(candName, "95% CI", sh.SpansZero(), sh.Lo > 0)
	if len(a) < stats.MinSamples || len(b) < stats.MinSamples {
		res.Text += fmt.Sprintf("; only %d and %d intervals, the interval is approximate below %d", len(a), len(b), stats.MinSamples)
	}
	return res
}

// decide sets the status and the words from the interval: it spans zero,
// or lies above it (candidate higher) or below. name is the interval's
// kind as the words give it ("95% CI").
func (res *Result) decide(candName, name string, spansZero, above bool) {
	ci := fmt.Sprintf("%+.1f%% (%s %+.1f%% to %+.1f%%)", 100*res.Rel, name, 100*res.RelLo, 100*res.RelHi)
	switch {
	case spansZero:
		res.Status = "no detectable difference"
		res.Text = "no detectable difference: " + ci
	case above:
		res.Status = "higher"
		res.Text = candName + " higher: " + ci
	default:
		res.Status = "lower"
		res.Text = candName + " lower: " + ci
	}
}

func nanZero(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// checks are what a careful reader verifies before trusting the verdict.
func checks(r *Report, interval time.Duration) []Check {
	var out []Check
	if len(r.Groups) < 2 {
		out = append(out, Check{Name: "groups", OK: false,
			Detail: fmt.Sprintf("%d poller group(s): split the loops (poller epoll poll, or poller epoll epoll for an A/A check)", len(r.Groups))})
		return out
	}
	// Load balance: SO_REUSEPORT spreads connections unevenly, so figures
	// are per request; a large imbalance still changes batching per wait.
	lo, hi := math.Inf(1), 0.0
	var parts []string
	for _, g := range r.Groups {
		lo, hi = math.Min(lo, g.PerLoop), math.Max(hi, g.PerLoop)
		parts = append(parts, fmt.Sprintf("%s %.0f%% (%.0f req/s per loop)", g.Name, 100*g.Share, g.PerLoop))
	}
	ratio := math.Inf(1)
	if lo > 0 {
		ratio = hi / lo
	}
	out = append(out, Check{Name: "load balance", OK: ratio <= maxImbalance,
		Detail: fmt.Sprintf("requests: %s; imbalance %.2f× per loop (figures are per request; above %.1f× the busier loops batch more events per wait, which favours them)", strings.Join(parts, ", "), ratio, maxImbalance)})
	// Enough samples.
	minN := math.MaxInt
	for _, g := range r.Groups {
		minN = min(minN, g.Intervals)
	}
	out = append(out, Check{Name: "enough intervals", OK: minN >= stats.MinSamples,
		Detail: fmt.Sprintf("%d intervals in the smallest group with ≥%d requests; the normal approximation wants ≥%d (idle intervals are left out)", minN, MinRequests, stats.MinSamples)})
	out = append(out, Check{Name: "interval length", OK: interval >= time.Second,
		Detail: fmt.Sprintf("%v per interval (ab_interval); short intervals give noisy p99s, long ones fewer samples", interval)})
	if !r.ThreadCPU {
		out = append(out, Check{Name: "thread CPU", OK: false, Detail: "this OS has no per-thread CPU clock: no CPU per request"})
	}
	if len(r.Marks) > 0 {
		out = append(out, marksCheck(r.Marks))
	}
	return out
}

func marksCheck(marks []Mark) Check {
	return Check{Name: "switches", OK: true,
		Detail: fmt.Sprintf("%d marked event(s) in the history (last: %s); samples are labelled by the poller they ran on", len(marks), marks[len(marks)-1].Label)}
}
