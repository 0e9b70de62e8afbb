package server_test

import (
	"bytes"
	stdtls "crypto/tls"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// A client whose last bytes and FIN reach the server together: on an
// edge-triggered poller both are reported in one event, and a read that
// stops at the end of the data never sees the end of the stream. Every
// such connection must still be closed, not left in CLOSE-WAIT.
func TestPeerCloseWithLastBytes(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		r := newRoutes()
		e := startEnv(t, backend, 1, r.forLoop, nil)
		const clients = 20
		for i := 0; i < clients; i++ {
			raw, err := net.Dial("tcp", e.addr)
			if err != nil {
				t.Fatal(err)
			}
			c := stdtls.Client(raw, e.tlsConfig("h2"))
			if err := c.Handshake(); err != nil {
				t.Fatal(err)
			}
			// Preface, SETTINGS and a request in one write,
			// then the FIN straight behind them.
			var out bytes.Buffer
			out.WriteString(http2.ClientPreface)
			fr := http2.NewFramer(&out, nil)
			fr.WriteSettings()
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: requestBlock("GET", "/hello"), EndStream: true, EndHeaders: true})
			// Keep the loop busy while the bytes and the FIN arrive, so
			// that it finds both in the socket at once.
			busy := make(chan struct{})
			e.group.Loops()[0].Post(func() { <-busy })
			c.Write(out.Bytes())
			raw.(*net.TCPConn).CloseWrite()
			// Real time: loopback delivers the bytes and the FIN on its
			// own, and nothing tells the client they are in the
			// server's socket; no timer of the server is involved.
			time.Sleep(20 * time.Millisecond)
			close(busy)
			defer c.Close()
		}
		// A count the loop changes.
		servertest.Within(5*time.Second, func() bool { return e.srv.Stats().Active == 0 })
		if n := e.srv.Stats().Active; n != 0 {
			t.Fatalf("%d of %d connections whose client closed are still open", n, clients)
		}
	})
}
