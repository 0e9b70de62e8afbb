package app

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// dnsName is the name the test DNS server answers; no other server does.
const dnsName = "app.pollproxy.test."

// startDNS runs a DNS server on loopback UDP that answers dnsName's A
// record with *a (AAAA: no record; any other name: NXDOMAIN) and counts
// the A queries; it returns its address.
func startDNS(t *testing.T, a *atomic.Pointer[netip.Addr], queries *atomic.Int32) string {
	t.Helper()
	return serveDNS(t, func(q dnsmessage.Question, b *dnsmessage.Builder) bool {
		if !strings.EqualFold(q.Name.String(), dnsName) {
			return false
		}
		if q.Type == dnsmessage.TypeA {
			queries.Add(1)
			b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET},
				dnsmessage.AResource{A: a.Load().As4()})
		}
		return true
	})
}

// serveDNS is a DNS server on loopback: answer writes the answers to one
// question and reports whether the name exists (NXDOMAIN otherwise).
func serveDNS(t *testing.T, answer func(q dnsmessage.Question, b *dnsmessage.Builder) bool) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired})
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			if !answer(q, &b) {
				b = dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true,
					RecursionDesired: h.RecursionDesired, RCode: dnsmessage.RCodeNameError})
				b.StartQuestions()
				b.Question(q)
			}
			if msg, err := b.Finish(); err == nil {
				pc.WriteTo(msg, from)
			}
		}
	}()
	return pc.LocalAddr().String()
}

// twinOrigins are two HTTP/1.1 origins on one port, at 127.0.0.1 and
// 127.0.0.2, answering their name; each response closes its connection,
// so every request dials the address the name has now.
func twinOrigins(t *testing.T) (port int) {
	t.Helper()
	serve := func(ln net.Listener, name string) {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			fmt.Fprint(w, name)
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
	}
	for try := 0; try < 20; try++ {
		a, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = a.Addr().(*net.TCPAddr).Port
		b, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(port)))
		if err != nil {
			a.Close()
			continue
		}
		serve(a, "a")
		serve(b, "b")
		return port
	}
	t.Skip("no port free on both 127.0.0.1 and 127.0.0.2")
	return 0
}

// TestDynamic: Caddy's "dynamic a" upstream is looked up from the DNS
// server its resolvers option names, again every refresh, and new
// connections follow the answer; over HTTP/2 and HTTP/1.1 on every poller
// backend.
func TestDynamic(t *testing.T) {
	port := twinOrigins(t)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		var addr atomic.Pointer[netip.Addr]
		var queries atomic.Int32
		first := netip.MustParseAddr("127.0.0.1")
		addr.Store(&first)
		dns := startDNS(t, &addr, &queries)
		site := fmt.Sprintf(`	reverse_proxy {
		dynamic a %s %d {
			resolvers %s
			refresh 50ms
			versions ipv4
		}
	}`, strings.TrimSuffix(dnsName, "."), port, dns)
		followsDNS(t, backend, site, &queries, func() {
			second := netip.MustParseAddr("127.0.0.2")
			addr.Store(&second)
		})
	})
}

// followsDNS starts site on backend, whose upstream answers "a" as DNS
// first has it, wants "a" from every client, calls change (the DNS answer
// now leads to "b") and waits until every client gets "b", with a lookup
// counted in queries after the change.
func followsDNS(t *testing.T, backend, site string, queries *atomic.Int32, change func()) {
	t.Helper()
	sitePort, cls := startSite(t, backend, site)
	base := fmt.Sprintf("https://localhost:%d/", sitePort)
	get := func(c *http.Client) string {
		resp, err := c.Get(base)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	for proto, c := range cls {
		if got := get(c); got != "200 a" {
			t.Fatalf("%s before the change: %q, want 200 a", proto, got)
		}
	}
	before := queries.Load()
	change()
	for proto, c := range cls {
		// Upstreams are re-resolved on a goroutine's timer, off the loops.
		var got string
		if !servertest.Within(5*time.Second, func() bool { got = get(c); return got == "200 b" }) {
			t.Fatalf("%s after the change: %q, want 200 b", proto, got)
		}
	}
	if n := queries.Load() - before; n < 1 {
		t.Errorf("%d lookups after the change", n)
	}
}
