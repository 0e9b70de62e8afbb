package ab

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/ab/stats"
)

// The crossover's judge compares each loop with itself. Its periods are
// taken three at a time (periods 0-2, 3-5, ... since the comparison
// began: a slot), so that in every slot each loop ran one poller in the
// middle period and the other in the two around it. The middle period
// against the mean of its neighbours (stats.LogContrast) estimates the
// log of the two pollers' ratio for that loop, and a load that drifts
// linearly over the slot cancels. Half the loops start on each poller, so
// in every slot half the loops have each poller in the middle: a burst
// that hits every loop in one period adds to one half's contrasts and
// takes from the other's. The slot's observation is the mean of its
// loops' signed contrasts, and the verdict is the confidence sequence
// (stats.ConfSeq) of those observations: valid whenever it is read.
// Slots do not overlap, so observations share no period.

// Design names, as Report.Design gives them.
const (
	DesignCrossover = "crossover"
	DesignFixed     = "fixed split"
)

// PlannedSlots is the number of observations the confidence sequence is
// tightest at: 40 slots of three 30 s periods is an hour.
const PlannedSlots = 40

// confSeq is the sequence every crossover verdict uses.
var confSeq = stats.NewConfSeq(Level, PlannedSlots)

// slot is one observation of the crossover's verdict for one metric.
type slot struct {
	n     int     // periods 3n to 3n+2
	loops int     // loops with all three periods busy
	value float64 // the mean signed log contrast: ln(candidate / baseline)
}

// crossoverSlots turns the periods into the observations of metric m:
// one per slot in which some loop served at least MinRequests requests in
// each of its three periods, signed so that it estimates
// ln(candidate / baseline).
func crossoverSlots(m Metric, periods []Period, baseArm int) []slot {
	type key struct{ loop, period int }
	by := map[key]*Period{}
	last := -1
	for i := range periods {
		p := &periods[i]
		by[key{p.Loop, p.Period}] = p
		last = max(last, p.Period)
	}
	seen := map[int]bool{}
	var loops []int
	for i := range periods {
		if l := periods[i].Loop; !seen[l] {
			seen[l] = true
			loops = append(loops, l)
		}
	}
	sort.Ints(loops)
	var out []slot
	for s := 0; 3*s+2 <= last; s++ {
		var sum float64
		n := 0
		for _, l := range loops {
			var v [3]float64
			ok := true
			var mid *Period
			for k := 0; k < 3 && ok; k++ {
				p := by[key{l, 3*s + k}]
				ok = p != nil && p.Requests >= MinRequests
				if ok {
					v[k] = m.get(&p.Sample)
					if k == 1 {
						mid = p
					}
				}
			}
			if !ok {
				continue
			}
			d, ok := stats.LogContrast(v[0], v[1], v[2])
			if !ok {
				continue
			}
			if mid.Arm == baseArm {
				d = -d
			}
			sum += d
			n++
		}
		if n > 0 {
			out = append(out, slot{n: s, loops: n, value: sum / float64(n)})
		}
	}
	return out
}

// crossoverCompare judges the crossover's periods: one Comparison of the
// second position's poller against the first's (in name order, as the
// fixed split orders its groups). every is the rotation period in
// intervals, which turns slots into intervals for "more".
func crossoverCompare(periods []Period, names [2]string, every int, effect float64) Comparison {
	baseArm := 0
	if names[1] < names[0] {
		baseArm = 1
	}
	c := Comparison{Baseline: names[baseArm], Candidate: names[1-baseArm]}
	for _, m := range Metrics {
		if m.Name == "cpu_per_request" && !netpoll.ThreadCPUSupported {
			continue
		}
		c.Results = append(c.Results, crossoverMetric(m, periods, baseArm, c.Candidate, every, effect))
	}
	return c
}

func crossoverMetric(m Metric, periods []Period, baseArm int, candName string, every int, effect float64) Result {
	var base, cand []float64
	for i := range periods {
		p := &periods[i]
		if p.Requests < MinRequests {
			continue
		}
		if p.Arm == baseArm {
			base = append(base, m.get(&p.Sample))
		} else {
			cand = append(cand, m.get(&p.Sample))
		}
	}
	res := Result{Metric: m.Name, Unit: m.Unit, N: len(base), M: len(cand),
		Base: nanZero(stats.Median(base)), Cand: nanZero(stats.Median(cand)), Method: DesignCrossover}
	slots := crossoverSlots(m, periods, baseArm)
	obs := make([]float64, len(slots))
	for i, s := range slots {
		obs[i] = s.value
	}
	e := confSeq.Interval(obs)
	res.Observations = e.N
	perSlot := 3 * every // intervals a slot takes
	if e.N >= 2 && e.SD > 0 {
		need := confSeq.NeededFor(math.Log1p(effect), e.SD)
		if need < math.MaxInt/perSlot {
			res.Needed = need * perSlot
			res.More = max(0, need-e.N) * perSlot
		}
	}
	if !e.Ready {
		res.Status = "too few intervals"
		res.Text = fmt.Sprintf("too few slots (%d of three periods with ≥%d requests in each; the confidence sequence wants %d)", e.N, MinRequests, stats.MinObservations)
		return res
	}
	res.Rel, res.RelLo, res.RelHi = math.Expm1(e.Mean), math.Expm1(e.Lo), math.Expm1(e.Hi)
	res.Shift, res.Lo, res.Hi = res.Rel*res.Base, res.RelLo*res.Base, res.RelHi*res.Base
	res.decide(candName, "95% confidence sequence", e.SpansZero(), e.Lo > 0)
	return res
}

// crossoverChecks replace the fixed split's load-balance and
// sample-count checks: each loop is compared with itself, so how the
// kernel spread the connections does not decide the verdict.
func crossoverChecks(r *Report, interval time.Duration, every int) []Check {
	out := []Check{{Name: "design", OK: true,
		Detail: fmt.Sprintf("crossover: every loop alternates between the pollers every %v (%d intervals, the first after each switch left out), half the loops starting on each; each loop is compared with itself, so how the kernel spreads connections does not decide the verdict", time.Duration(every)*interval, every)}}
	minN := math.MaxInt
	for _, c := range r.Comparisons {
		for _, res := range c.Results {
			minN = min(minN, res.Observations)
		}
	}
	if minN == math.MaxInt {
		minN = 0
	}
	out = append(out, Check{Name: "enough slots", OK: minN >= stats.MinObservations,
		Detail: fmt.Sprintf("%d slots of three periods in the sparsest figure; the confidence sequence gives a verdict from %d (idle periods are left out)", minN, stats.MinObservations)})
	out = append(out, Check{Name: "interval length", OK: interval >= time.Second,
		Detail: fmt.Sprintf("%v per interval (ab_interval); short intervals give noisy p99s, long ones fewer samples", interval)})
	if !r.ThreadCPU {
		out = append(out, Check{Name: "thread CPU", OK: false, Detail: "this OS has no per-thread CPU clock: no CPU per request"})
	}
	return out
}
