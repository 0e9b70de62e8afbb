package server_test

import (
	stdtls "crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/static"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// TestAcceptBalance: however the kernel spreads connections over the
// loops' listeners, each loop ends up holding its share: 4 loops, 8, then
// 12, open connections, each loop 2, then 3. A connection a loop hands to
// another is served there (every connection completes a request).
func TestAcceptBalance(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		h := static.New([]byte("ok"), "text/plain")
		e := startEnv(t, backend, 4, func(*netpoll.Loop) stream.Handler { return h }, nil)
		var conns []*stdtls.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for _, total := range []int{8, 12} {
			for len(conns) < total {
				c, err := stdtls.Dial("tcp", e.addr, e.tlsConfig("http/1.1"))
				if err != nil {
					t.Fatal(err)
				}
				c.SetDeadline(time.Now().Add(10 * time.Second))
				// A served request: the connection is held by a loop.
				fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
				buf := make([]byte, 256)
				if n, err := c.Read(buf); err != nil || n == 0 {
					t.Fatalf("connection %d: %v", len(conns), err)
				}
				conns = append(conns, c)
			}
			for i, n := range e.srv.Stats().Loads {
				if n != int64(total/4) {
					t.Fatalf("%d connections: loop %d holds %d, want %d (loads %v)", total, i, n, total/4, e.srv.Stats().Loads)
				}
			}
		}
		t.Logf("handed off %d of %d", e.srv.Stats().HandedOff, e.srv.Stats().Accepted)
	})
}
