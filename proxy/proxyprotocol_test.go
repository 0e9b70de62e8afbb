package proxy_test

import (
	"context"
	stdtls "crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// TestProxyProtocolToOrigin: transport http { proxy_protocol v1|v2 } to a
// real nginx listening with proxy_protocol. Each client's address reaches
// the origin in the header; a kept-alive origin connection serves again
// only the client it announced, so two clients from two addresses get two
// connections, and each its own back on its next request.
func TestProxyProtocolToOrigin(t *testing.T) {
	addr := startNginxServer(t, "proxy_protocol",
		`location / { return 200 "$proxy_protocol_addr:$proxy_protocol_port $connection"; }`)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		for _, v := range []int{1, 2} {
			e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, addr)},
				Pool: proxy.PoolConfig{ProxyProtocol: v}})
			// client is an HTTP/1.1 client whose one connection to
			// pollproxy comes from src; self is that connection's address.
			client := func(src string) (c *http.Client, self func() string) {
				var local net.Addr
				tr := &http.Transport{
					TLSNextProto: map[string]func(string, *stdtls.Conn) http.RoundTripper{},
					DialTLSContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
						d := &stdtls.Dialer{NetDialer: &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}, Config: e.tlsConfig("http/1.1")}
						c, err := d.DialContext(ctx, "tcp", e.addr)
						if err == nil {
							local = c.LocalAddr()
						}
						return c, err
					},
					MaxConnsPerHost: 1,
				}
				t.Cleanup(tr.CloseIdleConnections)
				return &http.Client{Transport: tr, Timeout: 10 * time.Second}, func() string { return local.String() }
			}
			get := func(c *http.Client) (announced, conn string) {
				t.Helper()
				res, err := c.Get(e.url("/"))
				if err != nil {
					t.Fatalf("v%d: %v", v, err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				announced, conn, _ = strings.Cut(string(b), " ")
				return announced, conn
			}
			a, selfA := client("127.0.0.2")
			b, selfB := client("127.0.0.3")
			a1, connA1 := get(a)
			if a1 != selfA() {
				t.Errorf("v%d: origin was told %q, want client A %s", v, a1, selfA())
			}
			b1, connB1 := get(b)
			if b1 != selfB() {
				t.Errorf("v%d: origin was told %q, want client B %s", v, b1, selfB())
			}
			if connB1 == connA1 {
				t.Errorf("v%d: client B got client A's origin connection %s", v, connA1)
			}
			a2, connA2 := get(a)
			if a2 != selfA() || connA2 != connA1 {
				t.Errorf("v%d: client A again: %q on connection %s, want %s on its kept-alive %s", v, a2, connA2, selfA(), connA1)
			}
		}
	})
}
