package upstream

// Upstream host names are looked up again off the loops on an interval,
// because DNS answers change (a redeployed app, a scaled service) and a
// proxy that resolved once at start-up keeps sending to the old address.
// Loops only ever read the current address set, through an atomic
// pointer: a lookup never blocks a loop, and a loop never waits for one.

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
)

// DefaultResolveInterval is how often a Resolver looks upstream names up
// again (Caddy's dynamic upstreams refresh once a minute too).
const DefaultResolveInterval = time.Minute

// SetAddrs replaces the addresses new connections to u go to, spread over
// all of them; existing connections are kept. An empty set is ignored: an
// upstream keeps its last good addresses.
func (u *Upstream) SetAddrs(addrs []netip.AddrPort) {
	if len(addrs) == 0 {
		return
	}
	a := append([]netip.AddrPort(nil), addrs...)
	u.addrs.Store(&a)
}

// Addrs returns the addresses new connections to u go to.
func (u *Upstream) Addrs() []netip.AddrPort {
	if a := u.addrs.Load(); a != nil {
		return *a
	}
	return []netip.AddrPort{u.Addr}
}

// DialAddr is the address of a loop's n-th new connection to u: round
// robin over every address the name resolved to, so that each loop spreads
// its connections without sharing a counter with the others.
func (u *Upstream) DialAddr(n uint) netip.AddrPort {
	a := u.addrs.Load()
	if a == nil || len(*a) == 0 {
		return u.Addr
	}
	return (*a)[n%uint(len(*a))]
}

// LookupFunc resolves "host:port" to addresses; netpoll.ResolveTCP is the
// real one.
type LookupFunc func(ctx context.Context, hostport string) ([]netip.AddrPort, error)

// Resolver looks the names of a set of upstreams up again on an interval,
// on its own goroutine. A failed or empty lookup keeps an upstream's last
// good addresses. Upstreams named by an IP address or a Unix socket are
// left alone.
type Resolver struct {
	interval time.Duration
	lookup   LookupFunc

	ctx    context.Context // cancelled by Close, which also ends a lookup
	cancel context.CancelFunc
	done   chan struct{}

	changed chan struct{} // Update wakes run to schedule a new set

	mu  sync.Mutex
	ups []*Upstream
}

// NewResolver starts a Resolver refreshing every interval
// (DefaultResolveInterval when 0) with lookup (netpoll.ResolveTCP when
// nil). Close stops it.
func NewResolver(interval time.Duration, lookup LookupFunc) *Resolver {
	if interval <= 0 {
		interval = DefaultResolveInterval
	}
	if lookup == nil {
		lookup = netpoll.ResolveTCP
	}
	r := &Resolver{interval: interval, lookup: lookup, done: make(chan struct{}), changed: make(chan struct{}, 1)}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	go r.run()
	return r
}

// Update sets the upstreams to refresh (those of the running
// configuration, after a start or a reload).
func (r *Resolver) Update(ups []*Upstream) {
	var named []*Upstream
	for _, u := range ups {
		if u.Path != "" {
			continue
		}
		if u.dynamic() != nil { // its own lookup reads its name (an SRV name has no port)
			named = append(named, u)
			continue
		}
		if host, _, err := net.SplitHostPort(u.Name); err != nil || host == "" {
			continue
		} else if _, err := netip.ParseAddr(host); err == nil {
			continue
		}
		named = append(named, u)
	}
	r.mu.Lock()
	r.ups = named
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// Close stops the refreshing and waits for a lookup in progress.
func (r *Resolver) Close() {
	r.cancel()
	<-r.done
}

// every is how often u is looked up.
func (r *Resolver) every(u *Upstream) time.Duration {
	if d := u.dynamic(); d != nil && d.Refresh > 0 {
		return d.Refresh
	}
	return r.interval
}

// run looks each upstream up when it is due: every interval, or its own
// refresh for a dynamic upstream. An upstream is first due one period
// after it is first seen (the load just resolved it).
func (r *Resolver) run() {
	defer close(r.done)
	next := map[*Upstream]time.Time{}
	t := time.NewTimer(r.interval)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		case <-r.changed:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		}
		r.mu.Lock()
		ups := r.ups
		r.mu.Unlock()
		wait := r.interval
		seen := make(map[*Upstream]bool, len(ups))
		for _, u := range ups {
			seen[u] = true
			every := r.every(u)
			due, known := next[u]
			if !known || time.Until(due) > every { // new, or its refresh was shortened
				due = time.Now().Add(every)
			}
			if !time.Now().Before(due) {
				r.refresh(u, every)
				due = time.Now().Add(every)
			}
			next[u] = due
			wait = min(wait, time.Until(due))
		}
		for u := range next {
			if !seen[u] {
				delete(next, u)
			}
		}
		t.Reset(max(wait, time.Millisecond))
	}
}

// refresh looks u up once, bounded by its period so a hung lookup cannot
// stack up behind itself.
func (r *Resolver) refresh(u *Upstream, every time.Duration) {
	ctx, cancel := context.WithTimeout(r.ctx, min(every, 10*time.Second))
	defer cancel()
	lookup := r.lookup
	if d := u.dynamic(); d != nil && d.Lookup != nil {
		lookup = d.Lookup
	}
	if addrs, err := lookup(ctx, u.Name); err == nil {
		u.SetAddrs(addrs)
	}
}
