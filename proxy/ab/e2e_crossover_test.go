package ab_test

import (
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/ab"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// The crossover end to end: the shortest interval and rotation the
// options allow (100 ms, two intervals a period, one of them the washout),
// so that the confidence sequence's ten slots of three periods take six
// seconds of sampling. A slot counts only when each of its periods holds
// 100 requests, and a busy shared machine's throughput varies: 9 s of load
// gave from 3 to 15 slots. So the load runs in rounds of crossRound, the
// verdict read after each as an operator would read the page, until it is
// decided or rests on crossSlots slots, at most crossRounds rounds: a
// confidence sequence allows stopping on what it says. The verdict's own
// check says the intervals are short.
const (
	crossInterval = 100 * time.Millisecond
	crossRotate   = "200ms"
	crossRound    = 6 * time.Second
	crossRounds   = 5
	crossSlots    = 12
)

// crossoverLoad loads p in rounds and reads the verdict on metric after
// each, as an operator watching the page would, until done says the
// verdict is enough or crossRounds rounds have run. It returns every
// report read, the last one last.
func crossoverLoad(t *testing.T, p *proxyUnderLoad, metric string, done func(ab.Result) bool) []*ab.Report {
	t.Helper()
	var looks []*ab.Report
	for round := 1; round <= crossRounds; round++ {
		p.load(t, crossRound)
		r := p.report(t)
		looks = append(looks, r)
		if done(find(t, r, metric)) {
			break
		}
	}
	return looks
}

// decisive is the figure the crossover tests judge by: CPU per request
// where the OS has a thread CPU clock, else p99. Deciding on one figure in
// advance is what docs/ab.md asks of an operator too.
func decisive() string {
	if netpoll.ThreadCPUSupported {
		return "cpu_per_request"
	}
	return "p99"
}

// crossoverRun runs one A/A crossover under load until the decisive
// figure rests on crossSlots slots and returns the first look that shows
// a difference, or the last look.
func crossoverRun(t *testing.T, pollers string) ab.Result {
	t.Helper()
	p := startProxyWith(t, pollers, crossInterval, crossRotate)
	looks := crossoverLoad(t, p, decisive(), func(res ab.Result) bool {
		return res.Observations >= crossSlots || (res.Observations >= 10 && res.Status != "no detectable difference")
	})
	r := looks[len(looks)-1]
	if r.Design != ab.DesignCrossover || r.Rotation <= 0 || len(r.Periods) == 0 {
		t.Fatalf("design %q, rotation %vs, %d periods: want the crossover", r.Design, r.Rotation, len(r.Periods))
	}
	res := find(t, r, decisive())
	if res.Method != ab.DesignCrossover || res.Observations < 10 {
		t.Fatalf("%s: method %q on %d slots, want the crossover's confidence sequence on at least 10", res.Metric, res.Method, res.Observations)
	}
	return res
}

// TestEndToEndCrossoverAA: with the loops of one backend alternating
// between the two positions of "poller X X", the crossover finds no
// difference at any look. A 95% confidence sequence excludes zero in up to one A/A
// run in twenty by design, so a difference is measured once more before
// the test fails.
func TestEndToEndCrossoverAA(t *testing.T) {
	// Seconds of load per backend; -short measures on one.
	polltest.ForEachBackend(t, servertest.ShortBackends(netpoll.Available()), func(t *testing.T, backend string) {
		for try := 1; ; try++ {
			res := crossoverRun(t, backend+" "+backend)
			if res.Status == "no detectable difference" {
				return
			}
			if try == 2 {
				t.Fatalf("A/A crossover, twice: %s", res.Text)
			}
			t.Logf("A/A crossover found %s; measuring again", res.Text)
		}
	})
}
