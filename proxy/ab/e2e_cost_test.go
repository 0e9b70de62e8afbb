//go:build pollproxy_abcost

package ab_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/ab"
)

// costIters is the busy loop injected into every wait of loop 1: about
// 20 µs on this kind of machine, measured below rather than assumed.
const costIters = 60000

// crossCostIters is the crossover test's cost: twice the fixed split's.
// Its verdict rests on ten to twenty slots of 100 ms intervals, whose
// interval on a busy shared machine was ±6 µs per request wide, the size
// of the fixed split's cost.
const crossCostIters = 2 * costIters

// spinCost measures one injected busy loop, the median of many runs.
func spinCost() time.Duration { return spinCostOf(costIters) }

// spinCostOf measures a busy loop of iters iterations: the least
// disturbed of many runs.
func spinCostOf(iters int) time.Duration {
	best := time.Duration(1 << 62)
	for r := 0; r < 20; r++ {
		start := time.Now()
		for i := 0; i < 50; i++ {
			netpoll.ABCostSpin(iters)
		}
		if d := time.Since(start) / 50; d < best {
			best = d // the least disturbed run: the spin's own cost
		}
	}
	return best
}

// TestEndToEndInjectedCost: with a fixed cost added to every wait of the
// second group's loop, the verdict finds its CPU per request higher, and
// the cost it should have added (the spin's cost times that group's waits
// per request) lies inside the 95% interval. Run with
// go test -tags pollproxy_abcost ./proxy/ab/.
func TestEndToEndInjectedCost(t *testing.T) {
	if !netpoll.ThreadCPUSupported {
		t.Skip("no per-thread CPU clock on this OS")
	}
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		t.Setenv("POLLPROXY_AB_COST", "loop1:"+strconv.Itoa(costIters))
		p := startProxy(t, backend+" "+backend)
		p.load(t, 5*time.Second)
		r := p.report(t)
		res := find(t, r, "cpu_per_request")
		waits := find(t, r, "waits_per_request")
		spin := spinCost()
		want := float64(spin.Nanoseconds()) / 1000 * waits.Cand
		t.Logf("spin %v × %.3f waits per request = %.2f µs expected; measured %+.2f µs [%+.2f, %+.2f]",
			spin, waits.Cand, want, res.Shift, res.Lo, res.Hi)
		if res.Status != "higher" {
			t.Fatalf("injected cost not detected as higher CPU per request: %s", res.Text)
		}
		// The spin's cost is itself measured on a shared machine: allow
		// it a quarter either way before calling the interval wrong.
		if want*1.25 < res.Lo || want*0.75 > res.Hi {
			t.Errorf("expected shift %.2f µs outside the interval [%.2f, %.2f]", want, res.Lo, res.Hi)
		}
	})
}

// TestEndToEndCrossoverInjectedCost: in the crossover of "poller X X",
// the injected cost follows the second position from loop to loop (the
// rotation hook moves it with the schedule), and the crossover's verdict
// finds that position's CPU per request higher, with the cost it should
// add inside the interval. Run with go test -tags pollproxy_abcost.
func TestEndToEndCrossoverInjectedCost(t *testing.T) {
	if !netpoll.ThreadCPUSupported {
		t.Skip("no per-thread CPU clock on this OS")
	}
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		// Two loops, half starting on each position: loop 1 serves the
		// second first, and the loops swap at every rotation.
		t.Setenv("POLLPROXY_AB_COST", "loop1:"+strconv.Itoa(crossCostIters))
		ab.SetRotateHook(func(arms []int) {
			for i, a := range arms {
				if a == 1 {
					os.Setenv("POLLPROXY_AB_COST", "loop"+strconv.Itoa(i)+":"+strconv.Itoa(crossCostIters))
				}
			}
		})
		t.Cleanup(func() { ab.SetRotateHook(nil) })
		p := startProxyWith(t, backend+" "+backend, crossInterval, crossRotate)
		// Watched as an operator would: stop at the first look that
		// decides (which a confidence sequence allows), at most
		// crossRounds rounds.
		looks := crossoverLoad(t, p, "cpu_per_request", func(res ab.Result) bool {
			return res.Observations >= 10 && res.Status != "no detectable difference"
		})
		r := looks[len(looks)-1]
		res := find(t, r, "cpu_per_request")
		waits := find(t, r, "waits_per_request")
		spin := spinCostOf(crossCostIters)
		want := float64(spin.Nanoseconds()) / 1000 * waits.Cand
		t.Logf("spin %v × %.3f waits per request = %.2f µs expected; measured %+.2f µs [%+.2f, %+.2f] on %d slots",
			spin, waits.Cand, want, res.Shift, res.Lo, res.Hi, res.Observations)
		if r.Design != ab.DesignCrossover || res.Status != "higher" {
			t.Fatalf("%s: injected cost not detected as higher CPU per request: %s", r.Design, res.Text)
		}
		if want*1.25 < res.Lo || want*0.75 > res.Hi {
			t.Errorf("expected shift %.2f µs outside the interval [%.2f, %.2f]", want, res.Lo, res.Hi)
		}
	})
}
