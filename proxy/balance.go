package proxy

// Balancing is per loop: the cursor and the connection counts it compares
// are the loop's own, so picking an upstream costs no lock; only the
// upstream's health, shared by every loop, is an atomic read.

import "time"

// Policy names a load-balancing policy.
type Policy string

// Load-balancing policies.
const (
	RoundRobin       Policy = "round_robin"
	LeastConnections Policy = "least_conn"
	First            Policy = "first"
)

// ValidPolicy reports whether p names a known policy.
func ValidPolicy(p Policy) bool {
	switch p {
	case RoundRobin, LeastConnections, First, "":
		return true
	}
	return false
}

// group is one loop's view of an upstream set: a pool per upstream and the
// balancer's cursor.
type group struct {
	pools  []*pool
	policy Policy
	next   int
}

// pick chooses a pool among the healthy upstreams (all of them when none
// is healthy, so a full outage still gets tried rather than refused), never
// one listed in skip. It runs on the loop; the round-robin cursor and the
// connection counts are this loop's own.
func (g *group) pick(now time.Time, skip *Upstream) *pool {
	var best *pool
	n := len(g.pools)
	for pass := 0; pass < 2 && best == nil; pass++ {
		for i := 0; i < n; i++ {
			p := g.pools[(g.next+i)%n]
			if p.up == skip && n > 1 {
				continue
			}
			if pass == 0 && !p.up.healthy(now) {
				continue
			}
			switch g.policy {
			case LeastConnections:
				if best == nil || p.load() < best.load() {
					best = p
				}
			default:
				best = p
			}
			if g.policy != LeastConnections {
				break
			}
		}
	}
	if g.policy != First {
		g.next = (g.next + 1) % n // also spreads least_conn ties
	}
	return best
}
