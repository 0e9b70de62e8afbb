package proxy_test

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// awaitAddrs waits for up's addresses to become want.
func awaitAddrs(t *testing.T, up *upstream.Upstream, want ...netip.AddrPort) {
	t.Helper()
	if !servertest.Within(5*time.Second, func() bool { return slices.Equal(up.Addrs(), want) }) {
		t.Fatalf("addresses %v, want %v", up.Addrs(), want)
	}
}

// TestResolverFollowsDNS: an upstream named by a host name is looked up
// again off the loops, and new connections follow the answer; a lookup
// that fails keeps the last good addresses.
func TestResolverFollowsDNS(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := newOrigin(t, nil)
		_, port, _ := net.SplitHostPort(o.addr)
		// Resolved "wrongly" at start-up: to a port nobody listens on.
		up := &upstream.Upstream{Name: "localhost:" + port, Addr: netip.MustParseAddrPort(closedAddr(t))}
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{up}})
		cl := e.h2Client(nil)
		if res, _ := get(t, cl, "https://localhost/"); res.StatusCode != 502 {
			t.Fatalf("before the lookup: %d, want 502", res.StatusCode)
		}
		r := upstream.NewResolver(20*time.Millisecond, nil) // the system's resolver
		defer r.Close()
		r.Update([]*upstream.Upstream{up})
		awaitAddrs(t, up, netip.MustParseAddrPort(o.addr))
		if res, b := get(t, cl, "https://localhost/"); res.StatusCode != 200 {
			t.Fatalf("after the lookup: %d %q", res.StatusCode, b)
		}

		// A name that does not resolve (RFC 6761 .invalid) keeps its last
		// good addresses.
		bad := &upstream.Upstream{Name: "pollproxy-test.invalid:" + port}
		bad.SetAddrs([]netip.AddrPort{netip.MustParseAddrPort(o.addr)})
		r.Update([]*upstream.Upstream{bad})
		time.Sleep(200 * time.Millisecond) // several failed lookups
		awaitAddrs(t, bad, netip.MustParseAddrPort(o.addr))
	})
}

// TestEveryAddressUsed: new connections go round robin over every address
// a name resolves to. This machine's resolver gives one address per name,
// so the lookup here answers two loopback origins for one name.
func TestEveryAddressUsed(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		a, b := newOrigin(t, nil), newOrigin(t, nil)
		addrs := []netip.AddrPort{netip.MustParseAddrPort(a.addr), netip.MustParseAddrPort(b.addr)}
		up := &upstream.Upstream{Name: "app.test:80", Addr: addrs[0]}
		r := upstream.NewResolver(20*time.Millisecond, func(ctx context.Context, hostport string) ([]netip.AddrPort, error) {
			if hostport != "app.test:80" {
				t.Errorf("looked up %q", hostport)
			}
			return addrs, nil
		})
		defer r.Close()
		r.Update([]*upstream.Upstream{up})
		awaitAddrs(t, up, addrs...)
		// One request per connection, so every request dials.
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{up}, Pool: proxy.PoolConfig{MaxRequests: 1}})
		cl := e.h2Client(nil)
		for i := range 10 {
			if res, _ := get(t, cl, "https://localhost/"+strconv.Itoa(i)); res.StatusCode != 200 {
				t.Fatalf("%d", res.StatusCode)
			}
		}
		if a.reqs.Load() != 5 || b.reqs.Load() != 5 {
			t.Errorf("origins saw %d and %d requests, want 5 each", a.reqs.Load(), b.reqs.Load())
		}
	})
}
