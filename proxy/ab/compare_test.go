package ab

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// simInstances makes n intervals of two instances under the same
// drifting load (a slow wave and bursts both see), each interval's figures
// noisy on its own, B's CPU per request shift times A's. skew moves B's
// interval ends against A's by that much.
func simInstances(rng *rand.Rand, n int, shift float64, skew time.Duration) (a, b *Report) {
	a, b = &Report{Interval: 10, Backends: []string{"epoll", "epoll"}}, &Report{Interval: 10, Backends: []string{"io_uring", "io_uring"}}
	start := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	for i := range n {
		load := 1 + 0.3*math.Sin(float64(i)/15)
		if rng.IntN(20) == 0 {
			load *= 1.5 // a burst
		}
		end := start.Add(time.Duration(i+1) * 10 * time.Second)
		mk := func(mult float64) Process {
			noise := math.Exp(0.05 * rng.NormFloat64())
			return Process{Interval: i, End: end, Seconds: 10, Requests: uint64(20000 * load),
				CPUPerRequest: 40 * mult * noise / math.Sqrt(load), P99: 900 * load * math.Exp(0.1*rng.NormFloat64()),
				RSS: int64(150<<20) + int64(rng.IntN(1<<20))}
		}
		pa, pb := mk(1), mk(shift)
		pb.End = pb.End.Add(skew)
		a.Process, b.Process = append(a.Process, pa), append(b.Process, pb)
	}
	return a, b
}

// TestCompareAAMonitored looks at simulated A/A comparisons after every
// block, as someone re-running `pollproxy ab --compare --watch` would, and
// stops at the first "different": at most 5% ever may.
func TestCompareAAMonitored(t *testing.T) {
	const runs, blocks = 1000, 120
	rng := rand.New(rand.NewPCG(1, 2))
	ever := 0
	for range runs {
		a, b := simInstances(rng, blocks*PairsPerBlock, 1, 0)
		var obs []float64
		for _, pr := range pairIntervals(a.Process, b.Process, 10) {
			obs = append(obs, math.Log(pr[1].CPUPerRequest/pr[0].CPUPerRequest))
		}
		means := blockMeans(obs, PairsPerBlock)
		for k := range means {
			if e := canarySeq.Interval(means[:k+1]); e.Ready && !e.SpansZero() {
				ever++
				break
			}
		}
	}
	if rate := float64(ever) / runs; rate > 0.05 {
		t.Errorf("%d of %d A/A runs, watched after every block, ever showed a difference (%.1f%%); want at most 5%%", ever, runs, 100*rate)
	} else {
		t.Logf("%d of %d A/A runs ever showed a difference", ever, runs)
	}
}

// TestCompareFindsShift: a 5% higher CPU per request on B is found with
// the sign right, the interval covers it, and the other figures see no
// difference.
func TestCompareFindsShift(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	found, covered := 0, 0
	const runs = 100
	for range runs {
		a, b := simInstances(rng, 60*PairsPerBlock, 1.05, 0)
		c := Compare(a, b, "127.0.0.1:2019", "127.0.0.1:2020", 0)
		res := c.Results[0]
		if res.Metric != "process_cpu_per_request" {
			t.Fatalf("first metric %q", res.Metric)
		}
		if res.Status == "higher" {
			found++
		}
		if res.RelLo <= 0.05 && 0.05 <= res.RelHi {
			covered++
		}
	}
	if found < 95 || covered < 95 {
		t.Errorf("a 5%% shift: found higher in %d of %d runs, covered in %d", found, runs, covered)
	}
}

// TestComparePairsAndText: intervals pair by their end within half an
// interval (a clock 3 s off still pairs them all; instances that ran at
// different times pair none), and the
// text names both instances' pollers.
func TestComparePairsAndText(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := simInstances(rng, 60, 1, 3*time.Second)
	if c := Compare(a, b, "a:1", "b:2", 0); c.Pairs != 60 {
		t.Errorf("3 s skew: %d pairs of 60", c.Pairs)
	}
	a, b = simInstances(rng, 60, 1, time.Hour)
	c := Compare(a, b, "a:1", "b:2", 0)
	if c.Pairs != 0 {
		t.Errorf("B an hour later: %d pairs, want none", c.Pairs)
	}
	for _, ch := range c.Checks {
		if ch.Name == "paired intervals" && ch.OK {
			t.Errorf("no pairs, yet the check passes: %s", ch.Detail)
		}
	}
	// One interval missing on B (a restart): the rest still pair.
	a, b = simInstances(rng, 60, 1, 0)
	b.Process = append(b.Process[:10:10], b.Process[11:]...)
	c = Compare(a, b, "a:1", "b:2", 0)
	if c.Pairs != 59 {
		t.Errorf("one interval missing: %d pairs, want 59", c.Pairs)
	}
	var buf bytes.Buffer
	if err := WriteCanaryText(&buf, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"epoll ×2", "io_uring ×2", "process_cpu_per_request (µs)", "rss (MiB)", "load balance"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
}
