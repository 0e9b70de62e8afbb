package ab

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/pollproxy/pollproxy/proxy/ab/stats"
)

// Two instances compared (a canary): where the loops of one process
// compare pollers by their own thread clocks, Compare judges two whole
// processes by what those clocks miss — TLS handshakes on the pool, the
// Go runtime's threads, memory — from the Process intervals each
// instance's /ab.json carries. The instances serve the same traffic
// (a load balancer in front splits it), so intervals that end at the same
// time saw the same load: each pair's log ratio (B over A) cancels what
// the load did to both, and the verdict is the confidence sequence of
// those ratios, valid however often it is read, as the crossover's is.
//
// Neighbouring intervals are not independent (memory above all moves
// slowly), so pairs are taken PairsPerBlock at a time and a block's mean
// ratio is one observation.

// PairsPerBlock is how many paired intervals make one observation.
const PairsPerBlock = 3

// PlannedBlocks is where the comparison's confidence sequence is
// tightest: 120 blocks of three 10 s intervals is an hour.
const PlannedBlocks = 120

var canarySeq = stats.NewConfSeq(Level, PlannedBlocks)

// CanaryMetrics are the whole-process figures Compare judges; lower is
// better for each.
var CanaryMetrics = []struct {
	Name, Unit string
	get        func(*Process) float64
	// busy says whether an interval needs MinRequests requests to count:
	// per-request figures do, memory does not.
	busy bool
}{
	{"process_cpu_per_request", "µs", func(p *Process) float64 { return p.CPUPerRequest }, true},
	{"p99", "µs", func(p *Process) float64 { return p.P99 }, true},
	{"rss", "MiB", func(p *Process) float64 { return float64(p.RSS) / (1 << 20) }, false},
}

// Instance is one side of a Canary.
type Instance struct {
	Admin     string   `json:"admin"`    // the admin listener it was read from
	Backends  []string `json:"backends"` // its loops' pollers
	Interval  float64  `json:"interval_seconds"`
	Intervals int      `json:"intervals"`
	Requests  uint64   `json:"requests"`
}

// Canary is the verdict of B against A.
type Canary struct {
	Generated time.Time `json:"generated"`
	A         Instance  `json:"a"`
	B         Instance  `json:"b"`
	Pairs     int       `json:"pairs"` // intervals of A and B that ended together
	Effect    float64   `json:"effect"`
	Results   []Result  `json:"results"`
	Checks    []Check   `json:"checks"`
}

// Compare judges instance b against instance a from their reports (as
// /ab.json serves them); adminA and adminB name them. effect <= 0 means
// DefaultEffect.
func Compare(a, b *Report, adminA, adminB string, effect float64) *Canary {
	if effect <= 0 {
		effect = DefaultEffect
	}
	c := &Canary{Generated: time.Now(), Effect: effect, A: instanceOf(a, adminA), B: instanceOf(b, adminB)}
	pairs := pairIntervals(a.Process, b.Process, math.Max(a.Interval, b.Interval))
	c.Pairs = len(pairs)
	candName := "B (" + c.B.Admin + ")"
	for _, m := range CanaryMetrics {
		var base, cand, ratios []float64
		for _, pr := range pairs {
			pa, pb := pr[0], pr[1]
			if m.busy && (pa.Requests < MinRequests || pb.Requests < MinRequests) {
				continue
			}
			x, y := m.get(pa), m.get(pb)
			if !(x > 0 && y > 0) {
				continue
			}
			base, cand = append(base, x), append(cand, y)
			ratios = append(ratios, math.Log(y/x))
		}
		obs := blockMeans(ratios, PairsPerBlock)
		res := Result{Metric: m.Name, Unit: m.Unit, N: len(base), M: len(cand), Method: "paired intervals of two instances",
			Base: nanZero(stats.Median(base)), Cand: nanZero(stats.Median(cand))}
		e := canarySeq.Interval(obs)
		res.Observations = e.N
		if e.N >= 2 && e.SD > 0 {
			if need := canarySeq.NeededFor(math.Log1p(effect), e.SD); need < math.MaxInt/PairsPerBlock {
				res.Needed = need * PairsPerBlock
				res.More = max(0, need-e.N) * PairsPerBlock
			}
		}
		if !e.Ready {
			res.Status = "too few intervals"
			res.Text = fmt.Sprintf("too few paired intervals (%d blocks of %d; the confidence sequence wants %d)", e.N, PairsPerBlock, stats.MinObservations)
		} else {
			res.Rel, res.RelLo, res.RelHi = math.Expm1(e.Mean), math.Expm1(e.Lo), math.Expm1(e.Hi)
			res.Shift, res.Lo, res.Hi = res.Rel*res.Base, res.RelLo*res.Base, res.RelHi*res.Base
			res.decide(candName, "95% confidence sequence", e.SpansZero(), e.Lo > 0)
		}
		c.Results = append(c.Results, res)
	}
	c.Checks = canaryChecks(c, pairs)
	return c
}

func instanceOf(r *Report, admin string) Instance {
	in := Instance{Admin: admin, Backends: r.Backends, Interval: r.Interval, Intervals: len(r.Process)}
	for _, p := range r.Process {
		in.Requests += p.Requests
	}
	return in
}

// pairIntervals matches each interval of a with the interval of b that
// ended nearest to it, within half an interval; each is used once. Both
// lists are oldest first.
func pairIntervals(a, b []Process, interval float64) [][2]*Process {
	tol := time.Duration(interval / 2 * float64(time.Second))
	var out [][2]*Process
	j := 0
	for i := range a {
		end := a[i].End
		for j < len(b) && b[j].End.Before(end.Add(-tol)) {
			j++
		}
		if j < len(b) && absDur(b[j].End.Sub(end)) <= tol {
			out = append(out, [2]*Process{&a[i], &b[j]})
			j++
		}
	}
	return out
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// blockMeans averages xs n at a time, oldest first; a last block short of
// n is left for the next reading.
func blockMeans(xs []float64, n int) []float64 {
	var out []float64
	for i := 0; i+n <= len(xs); i += n {
		var s float64
		for _, x := range xs[i : i+n] {
			s += x
		}
		out = append(out, s/float64(n))
	}
	return out
}

// canaryChecks are what to verify before trusting a canary verdict.
func canaryChecks(c *Canary, pairs [][2]*Process) []Check {
	var out []Check
	ba, bb := backendLine(c.A.Backends), backendLine(c.B.Backends)
	detail := fmt.Sprintf("A runs %s, B runs %s", ba, bb)
	if ba == bb {
		detail += ": the same pollers, an A/A comparison (it should find no difference)"
	}
	out = append(out, Check{Name: "backends", OK: true, Detail: detail})
	var ra, rb float64
	for _, pr := range pairs {
		ra += float64(pr[0].Requests)
		rb += float64(pr[1].Requests)
	}
	ratio := math.Inf(1)
	if lo := math.Min(ra, rb); lo > 0 {
		ratio = math.Max(ra, rb) / lo
	}
	out = append(out, Check{Name: "load balance", OK: ratio <= maxImbalance,
		Detail: fmt.Sprintf("%.0f and %.0f requests in the paired intervals, %.2f× (figures are per request; above %.1f× the busier instance batches more per wait, which favours it: fix the balancer's weights)", ra, rb, ratio, maxImbalance)})
	out = append(out, Check{Name: "paired intervals", OK: len(pairs)/PairsPerBlock >= stats.MinObservations,
		Detail: fmt.Sprintf("%d intervals of A and B ended within half an interval of each other (the hosts' clocks must agree); the verdict wants %d blocks of %d", len(pairs), stats.MinObservations, PairsPerBlock)})
	out = append(out, Check{Name: "interval length", OK: c.A.Interval == c.B.Interval,
		Detail: fmt.Sprintf("ab_interval %gs and %gs (set both the same)", c.A.Interval, c.B.Interval)})
	memory := "memory is each process's resident set at an interval's end; two processes differ by their history too, so read a few percent as noise"
	for _, pr := range pairs {
		if pr[0].RSS == 0 || pr[1].RSS == 0 {
			memory = "an instance's OS gives no current resident set: memory is left out"
			break
		}
	}
	out = append(out, Check{Name: "memory", OK: !strings.HasPrefix(memory, "an instance"), Detail: memory})
	return out
}

// backendLine names a list of loop backends compactly: "epoll ×2, poll ×2".
func backendLine(bs []string) string {
	if len(bs) == 0 {
		return "(unknown)"
	}
	n := map[string]int{}
	for _, b := range bs {
		n[b]++
	}
	names := make([]string, 0, len(n))
	for b := range n {
		names = append(names, b)
	}
	sort.Strings(names)
	for i, b := range names {
		names[i] = fmt.Sprintf("%s ×%d", b, n[b])
	}
	return strings.Join(names, ", ")
}
