package upstream_test

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// fakeDNS is a lookup answering from a table it can be told to change,
// counting the names it was asked; a name with no answer fails.
type fakeDNS struct {
	mu      sync.Mutex
	answers map[string][]netip.AddrPort
	asked   map[string]int
}

func (d *fakeDNS) set(name string, addrs ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var a []netip.AddrPort
	for _, s := range addrs {
		a = append(a, netip.MustParseAddrPort(s))
	}
	d.answers[name] = a
}

func (d *fakeDNS) lookup(_ context.Context, hostport string) ([]netip.AddrPort, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked[hostport]++
	if a, ok := d.answers[hostport]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func (d *fakeDNS) count(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.asked[name]
}

func newFakeDNS() *fakeDNS {
	return &fakeDNS{answers: map[string][]netip.AddrPort{}, asked: map[string]int{}}
}

// awaitAddrs waits for up's addresses to become want: the Resolver
// refreshes them on its own goroutine.
func awaitAddrs(t *testing.T, up *upstream.Upstream, want ...string) {
	t.Helper()
	var w []netip.AddrPort
	for _, s := range want {
		w = append(w, netip.MustParseAddrPort(s))
	}
	if !servertest.Within(5*time.Second, func() bool { return slices.Equal(up.Addrs(), w) }) {
		t.Fatalf("%s: addresses %v, want %v", up.Name, up.Addrs(), w)
	}
}

// TestResolver: a named upstream follows its name's answers; a failed or
// empty answer keeps the last good addresses; upstreams named by an
// address or a Unix socket are never looked up.
func TestResolver(t *testing.T) {
	dns := newFakeDNS()
	dns.set("app.test:80", "127.0.0.2:80")
	named := &upstream.Upstream{Name: "app.test:80", Addr: netip.MustParseAddrPort("127.0.0.1:80")}
	byIP := &upstream.Upstream{Name: "127.0.0.9:80", Addr: netip.MustParseAddrPort("127.0.0.9:80")}
	sock := &upstream.Upstream{Name: "unix//run/app.sock", Path: "/run/app.sock"}

	r := upstream.NewResolver(5*time.Millisecond, dns.lookup)
	defer r.Close()
	r.Update([]*upstream.Upstream{named, byIP, sock})
	awaitAddrs(t, named, "127.0.0.2:80")

	dns.set("app.test:80", "127.0.0.3:80", "127.0.0.4:80")
	awaitAddrs(t, named, "127.0.0.3:80", "127.0.0.4:80")

	// The name stops resolving: a few failed lookups later, the last good
	// answer still stands.
	dns.set("app.test:80")
	n := dns.count("app.test:80")
	for dns.count("app.test:80") < n+3 {
		time.Sleep(time.Millisecond)
	}
	awaitAddrs(t, named, "127.0.0.3:80", "127.0.0.4:80")
	if dns.count("127.0.0.9:80") != 0 || dns.count("unix//run/app.sock") != 0 {
		t.Errorf("looked up an address or a socket: %v", dns.asked)
	}
	if !slices.Equal(byIP.Addrs(), []netip.AddrPort{byIP.Addr}) {
		t.Errorf("an upstream named by its address has addresses %v", byIP.Addrs())
	}

	// Left out of an Update, the upstream is no longer looked up: once
	// the new set was looked up (lookups run one after the other), a new
	// answer for the old name is never taken.
	other := &upstream.Upstream{Name: "other.test:80"}
	dns.set("other.test:80", "127.0.0.6:80")
	r.Update([]*upstream.Upstream{other})
	awaitAddrs(t, other, "127.0.0.6:80")
	dns.set("app.test:80", "127.0.0.5:80")
	n = dns.count("other.test:80")
	for dns.count("other.test:80") < n+3 {
		time.Sleep(time.Millisecond)
	}
	awaitAddrs(t, named, "127.0.0.3:80", "127.0.0.4:80")
}

// TestDynamicUpstream: a dynamic upstream is looked up with its own lookup
// on its own refresh, not the Resolver's.
func TestDynamicUpstream(t *testing.T) {
	global, own := newFakeDNS(), newFakeDNS()
	global.set("app.test:80", "127.0.0.2:80")
	own.set("app.test:80", "127.0.0.7:80")
	up := &upstream.Upstream{Name: "app.test:80"}
	up.SetDynamic(&upstream.Dynamic{Refresh: 5 * time.Millisecond, Lookup: own.lookup})

	r := upstream.NewResolver(time.Hour, global.lookup)
	defer r.Close()
	r.Update([]*upstream.Upstream{up})
	awaitAddrs(t, up, "127.0.0.7:80")
	if global.count("app.test:80") != 0 {
		t.Error("a dynamic upstream was looked up with the Resolver's lookup")
	}
}

// TestDialAddr: a loop's new connections go round robin over every
// address; before any lookup, to Addr; an empty answer changes nothing.
func TestDialAddr(t *testing.T) {
	a := netip.MustParseAddrPort("127.0.0.1:80")
	up := &upstream.Upstream{Name: "app.test:80", Addr: a}
	if up.DialAddr(3) != a || !slices.Equal(up.Addrs(), []netip.AddrPort{a}) {
		t.Fatalf("before a lookup: DialAddr %v, Addrs %v", up.DialAddr(3), up.Addrs())
	}
	set := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.2:80"), netip.MustParseAddrPort("127.0.0.3:80")}
	up.SetAddrs(set)
	set[0] = a // the caller's slice is not kept
	var got []netip.AddrPort
	for n := range uint(4) {
		got = append(got, up.DialAddr(n))
	}
	want := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.2:80"), netip.MustParseAddrPort("127.0.0.3:80"),
		netip.MustParseAddrPort("127.0.0.2:80"), netip.MustParseAddrPort("127.0.0.3:80")}
	if !slices.Equal(got, want) {
		t.Errorf("DialAddr 0..3 = %v, want %v", got, want)
	}
	up.SetAddrs(nil)
	if len(up.Addrs()) != 2 {
		t.Errorf("an empty answer replaced the addresses: %v", up.Addrs())
	}
}

// TestDNSLookup: the lookup asks the system's resolver (localhost is in
// every hosts file) and names a bad DNS server at once.
func TestDNSLookup(t *testing.T) {
	lookup, err := upstream.DNSLookup(nil, "ip4", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got, err := lookup(context.Background(), "localhost:http")
	if err != nil || !slices.Contains(got, netip.MustParseAddrPort("127.0.0.1:80")) {
		t.Errorf("localhost:http = %v, %v", got, err)
	}
	if _, err := upstream.DNSLookup([]string{"dns.example"}, "ip", 0); err == nil {
		t.Error("a DNS server named by a host name was accepted")
	}
	if _, err := upstream.DNSLookup([]string{"192.0.2.53", "[2001:db8::53]:5353"}, "ip", 0); err != nil {
		t.Errorf("DNS servers by address: %v", err)
	}
}
