package proxy_test

import (
	"bufio"
	stdtls "crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// TestTunnelH1BytesBehindUpgrade: a client that sends its first tunnel
// bytes in the same write (so the same TLS record) as its Upgrade
// request, and then waits, as a browser may. The bytes sit in the front
// end's buffer while the origin answers; the 101 must hand them on
// without waiting for more input. The origin answers with its 101 and
// its first bytes in one write, then speaks again only after it got the
// client's: any byte held back anywhere hangs the exchange.
func TestTunnelH1BytesBehindUpgrade(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		addr := servertest.ServeConns(t, func(c net.Conn) {
			c.SetDeadline(time.Now().Add(20 * time.Second))
			br := bufio.NewReader(c)
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: x-test\r\n\r\nhello, ")
			first := make([]byte, len("first frame"))
			if _, err := io.ReadFull(br, first); err != nil {
				return
			}
			fmt.Fprintf(c, "got %s", first)
			io.Copy(io.Discard, br)
		})
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, addr)}})
		for i := 0; i < 20; i++ {
			conn, err := stdtls.Dial("tcp", e.addr, e.tlsConfig("http/1.1"))
			if err != nil {
				t.Fatal(err)
			}
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			// One Write, one TLS record: the request and the tunnel's
			// first bytes arrive together.
			io.WriteString(conn, "GET /t HTTP/1.1\r\nhost: localhost\r\nconnection: Upgrade\r\nupgrade: x-test\r\n\r\nfirst frame")
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != 101 {
				t.Fatalf("dial %d: upgrade response %v %v", i, resp, err)
			}
			got := make([]byte, len("hello, got first frame"))
			if _, err := io.ReadFull(br, got); err != nil || string(got) != "hello, got first frame" {
				t.Fatalf("dial %d: the origin's answer to the bytes behind the request: %q %v", i, got, err)
			}
			conn.Close()
		}
	})
}
