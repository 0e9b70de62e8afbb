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

// TestErrorMidUploadSaysClose: an origin that dies while an HTTP/1.1
// upload is still arriving gets the client a 502 whose head says
// connection: close, since the rest of the body will not be read and the
// connection closes after it (RFC 9112 §9.6). Without it, a client sends
// its next request on a connection about to close, and loses it.
func TestErrorMidUploadSaysClose(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		addr := servertest.ServeConns(t, func(c net.Conn) {
			c.Read(make([]byte, 1024)) // part of the request, then gone
			c.Close()
		})
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, addr)}})
		c, err := stdtls.Dial("tcp", e.addr, e.tlsConfig("http/1.1"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		const size = 64 << 20
		fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n", size)
		c.Write(make([]byte, 64<<10)) // a first part; the rest never comes
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 502 || !res.Close {
			t.Fatalf("%d, Connection %q (close %v): want 502 with connection: close", res.StatusCode, res.Header.Get("Connection"), res.Close)
		}
	})
}
