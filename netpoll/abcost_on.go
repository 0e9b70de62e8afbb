//go:build unix && pollproxy_abcost

package netpoll

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// This file exists only in builds with the pollproxy_abcost tag, which the
// A/B end-to-end test uses to check that the verdict finds a known cost.
// POLLPROXY_AB_COST=WHO:N makes every wait of the chosen loops spin a
// fixed busy loop of N iterations; WHO is a backend name ("poll") or a
// loop ("loop1"). Never in a normal build: see abcost_off.go.
const abCostEnabled = true

var abCostSink atomic.Uint64 // keeps the spin from being optimised away

// abCost reads the variable on every wait, so that tests in one process
// can set it differently (the lookup costs both groups alike).
func (l *Loop) abCost() {
	who, n, ok := strings.Cut(os.Getenv("POLLPROXY_AB_COST"), ":")
	if !ok || (who != l.poller.Name() && who != "loop"+strconv.Itoa(l.id)) {
		return
	}
	iters, _ := strconv.Atoi(n)
	ABCostSpin(iters)
}

// ABCostSpin runs the fixed busy loop of n iterations the cost injects, so
// a test can measure what one costs.
func ABCostSpin(n int) {
	x := uint64(n)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	abCostSink.Store(x)
}
