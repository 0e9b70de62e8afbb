package app

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

const (
	srvName   = "_app._tcp.pollproxy.test."
	srvTarget = "app.pollproxy.test."
)

// startSRVDNS is a DNS server on loopback answering srvName's SRV query
// with srvTarget at the port *port holds, and srvTarget's A query with
// 127.0.0.1; it counts the SRV queries.
func startSRVDNS(t *testing.T, port *atomic.Uint32, queries *atomic.Int32) string {
	t.Helper()
	target := dnsmessage.MustNewName(srvTarget)
	return serveDNS(t, func(q dnsmessage.Question, b *dnsmessage.Builder) bool {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Type: q.Type, Class: dnsmessage.ClassINET, TTL: 1}
		switch name := q.Name.String(); {
		case strings.EqualFold(name, srvName):
			if q.Type == dnsmessage.TypeSRV {
				queries.Add(1)
				b.SRVResource(rh, dnsmessage.SRVResource{Priority: 10, Weight: 1, Port: uint16(port.Load()), Target: target})
			}
		case strings.EqualFold(name, srvTarget):
			if q.Type == dnsmessage.TypeA {
				b.AResource(rh, dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}})
			}
		default:
			return false
		}
		return true
	})
}

// closingOrigin answers its name and closes each connection, so that every
// request dials what the upstream resolves to now.
func closingOrigin(t *testing.T, name string) uint32 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		fmt.Fprint(w, name)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return uint32(ln.Addr().(*net.TCPAddr).Port)
}

// TestDynamicSRV: Caddy's "dynamic srv" upstream follows the SRV record
// its resolvers return, again every refresh: the target's address with the
// record's port; over HTTP/2 and HTTP/1.1 on every poller backend.
func TestDynamicSRV(t *testing.T) {
	a, b := closingOrigin(t, "a"), closingOrigin(t, "b")
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		var port atomic.Uint32
		var queries atomic.Int32
		port.Store(a)
		dns := startSRVDNS(t, &port, &queries)
		site := fmt.Sprintf(`	reverse_proxy {
		dynamic srv {
			service app
			proto tcp
			name %s
			resolvers %s
			refresh 50ms
		}
	}`, strings.TrimSuffix(srvName[len("_app._tcp."):], "."), dns)
		followsDNS(t, backend, site, &queries, func() { port.Store(b) })
	})
}
