package upstream

// An Upstream is shared by every loop, unlike the pools and the balancer,
// which are per loop; so everything on it is an atomic.

import (
	"net/netip"
	"strings"
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
	// Path, when set, is the Unix socket pollproxy connects to instead
	// (an upstream written unix//path, as in Caddy).
	Path string
	// Dial, when set, is Caddy's dial address for the upstream where it
	// differs from Name: ":8080" for an upstream written without a host,
	// which pollproxy names (and dials as) localhost:8080. Caddy hashes,
	// signs (lb_policy cookie) and fills {upstream_hostport} with it.
	Dial string

	fails    atomic.Int32 // failures remembered now (passive health)
	maxFails atomic.Int32 // failures that make it unhealthy; 0: passive checks off
	idleCap  atomic.Int64 // nanoseconds; 0: none learned (see LearnIdleClose)

	// addrs are every address of the name (SetAddrs); nil: Addr only.
	addrs atomic.Pointer[[]netip.AddrPort]
	// activeDown: the active health checks (activehealth.go) failed.
	activeDown atomic.Bool
	// dyn: a dynamic upstream's own lookup settings (dynamic.go).
	dyn atomic.Pointer[Dynamic]

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

// HostPort is what Caddy's {upstream_hostport} names: host:port as
// configured, or a Unix socket's path.
func (u *Upstream) HostPort() string {
	if u.Path != "" {
		return u.Path
	}
	return u.CaddyDial()
}

// CaddyDial is the upstream's address as Caddy spells it (its Upstream's
// Dial): what its hashing policies hash and its cookie policy signs.
func (u *Upstream) CaddyDial() string {
	if u.Dial != "" {
		return u.Dial
	}
	return u.Name
}

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

// ReuseRatio is the share of requests that went over a kept-alive
// connection rather than a new one.
func (u *Upstream) ReuseRatio() float64 {
	r := u.Requests.Load()
	if r == 0 {
		return 0
	}
	return float64(u.Reuses.Load()) / float64(r)
}

// UnixSocketPath reports whether an upstream address is Caddy's Unix
// socket form, "unix//run/app.sock" (an absolute path) or "unix/app.sock"
// (relative to the working directory), and returns the path.
func UnixSocketPath(addr string) (string, bool) {
	path, ok := strings.CutPrefix(addr, "unix/")
	return path, ok && path != ""
}

// minIdleCap is the least idle timeout LearnIdleClose sets: an origin that
// closes every idle connection sooner is better served by the retry.
const minIdleCap = 100 * time.Millisecond

// IdleBelow is how long pollproxy keeps a connection idle when the origin
// closes idle connections after d (learned, or announced in Keep-Alive:
// timeout): a quarter less (at least 100 ms less), so our close comes
// first even when the origin's clock started before ours (it counts from
// its last write, we from our last read).
func IdleBelow(d time.Duration) time.Duration {
	return d - max(d/4, minIdleCap)
}

// LearnIdleClose records that the origin closed a connection that had
// been idle for age: this upstream's connections are kept idle for less
// from now on, on every loop, so the next ones are closed by us before the
// origin's close can race a request. It only ever lowers the cap (an
// origin restart that closes young connections costs reuse of long-idle
// connections only, never a 502).
func (u *Upstream) LearnIdleClose(age time.Duration) {
	limit := max(IdleBelow(age), minIdleCap)
	for {
		cur := u.idleCap.Load()
		if cur != 0 && time.Duration(cur) <= limit {
			return
		}
		if u.idleCap.CompareAndSwap(cur, int64(limit)) {
			return
		}
	}
}

// IdleCap is the idle timeout learned from the origin's own idle closes
// (LearnIdleClose), or 0 when the origin never closed an idle connection.
func (u *Upstream) IdleCap() time.Duration { return time.Duration(u.idleCap.Load()) }
