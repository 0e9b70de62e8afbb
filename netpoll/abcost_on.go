//go:build unix && pollproxy_abcost

package netpoll

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// This file exists only in builds with the pollproxy_abcost tag, which the
// A/B end-to-end test uses to check that the verdict finds a known cost.
// POLLPROXY_AB_COST=WHO:N makes every wait of the chosen loops spin a
// fixed busy loop of N iterations; WHO is a backend name ("poll") or a
// loop ("loop1"). Never in a normal build: see abcost_off.go.
const abCostEnabled = true

var (
	abCostOnce  sync.Once
	abCostWho   string
	abCostIters int
	abCostSink  atomic.Uint64 // keeps the spin from being optimised away
)

func (l *Loop) abCost() {
	abCostOnce.Do(func() {
		who, n, ok := strings.Cut(os.Getenv("POLLPROXY_AB_COST"), ":")
		if ok {
			abCostWho = who
			abCostIters, _ = strconv.Atoi(n)
		}
	})
	if abCostIters <= 0 || (abCostWho != l.poller.Name() && abCostWho != "loop"+strconv.Itoa(l.id)) {
		return
	}
	x := uint64(l.id)
	for i := 0; i < abCostIters; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	abCostSink.Store(x)
}
