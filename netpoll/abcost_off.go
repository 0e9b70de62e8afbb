//go:build unix && !pollproxy_abcost

package netpoll

// abCostEnabled is false in every normal build: the test-only cost of
// abcost_on.go is compiled out, and the check in RunOnce with it.
const abCostEnabled = false

func (l *Loop) abCost() {}
