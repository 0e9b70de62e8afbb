package proxy

// An Upstream is shared by every loop, unlike the pools and the balancer,
// which are per loop; so everything on it is an atomic.

import (
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/pollproxy/pollproxy/proxy/observe"
)

// Upstream is one origin address. It is shared by every loop; its health
// and counters are atomics, never locks. Connections to it are pooled per
// loop.
type Upstream struct {
	// Name is how the upstream was configured ("host:port").
	Name string
	// Addr is the resolved address pollproxy connects to.
	Addr netip.AddrPort

	fails     atomic.Int32 // consecutive failures
	downUntil atomic.Int64 // unix nanoseconds; skipped by the balancer until then

	// Counters for metrics and pool statistics.
	Requests  atomic.Uint64 // requests sent to this upstream
	Connects  atomic.Uint64 // new connections opened
	Reuses    atomic.Uint64 // requests sent over a kept-alive connection
	Failures  atomic.Uint64 // connect errors, timeouts, broken responses
	Retries   atomic.Uint64 // requests retried after a reused connection failed
	Broken    atomic.Uint64 // responses broken off after their head went to the client
	OpenConns atomic.Int64  // connections open now, on every loop
}

var _ observe.Upstream = (*Upstream)(nil)

// Stats returns a snapshot of the counters, for metrics.
func (u *Upstream) Stats() observe.UpstreamStats {
	return observe.UpstreamStats{
		Name:      u.Name,
		Requests:  u.Requests.Load(),
		Connects:  u.Connects.Load(),
		Reuses:    u.Reuses.Load(),
		Failures:  u.Failures.Load(),
		Retries:   u.Retries.Load(),
		Broken:    u.Broken.Load(),
		OpenConns: u.OpenConns.Load(),
	}
}

// Health configures passive health checking: an upstream that fails
// MaxFails times in a row is skipped for FailTimeout.
type Health struct {
	MaxFails    int
	FailTimeout time.Duration
}

func (u *Upstream) healthy(now time.Time) bool {
	return now.UnixNano() >= u.downUntil.Load()
}

func (u *Upstream) failed(h Health, now time.Time) {
	u.Failures.Add(1)
	if h.MaxFails <= 0 {
		return
	}
	if int(u.fails.Add(1)) >= h.MaxFails {
		u.downUntil.Store(now.Add(h.FailTimeout).UnixNano())
		u.fails.Store(0)
	}
}

func (u *Upstream) succeeded() {
	if u.fails.Load() != 0 {
		u.fails.Store(0)
	}
}

// ReuseRatio is the share of requests that went over a kept-alive
// connection rather than a new one.
func (u *Upstream) ReuseRatio() float64 {
	r := u.Requests.Load()
	if r == 0 {
		return 0
	}
	return float64(u.Reuses.Load()) / float64(r)
}
