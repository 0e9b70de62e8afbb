package app

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// stuckOrigin accepts connections and reads nothing until told to, so a
// request body fills the socket buffers and pollproxy's write blocks. The
// channel yields each accepted connection.
func stuckOrigin(t *testing.T) (string, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*net.TCPConn).SetReadBuffer(4 << 10)
			conns <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case c := <-conns:
				c.Close()
			default:
				return
			}
		}
	})
	return ln.Addr().String(), conns
}

// endless is a request body that never runs out before the test stops
// reading it.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	if len(p) > e.n {
		p = p[:e.n]
	}
	clear(p)
	e.n -= len(p)
	return len(p), nil
}

// TestTransportWriteTimeout: transport http { write_timeout } bounds a
// write of the request to an origin that stopped reading: the client gets
// a 504 and the origin's connection is closed.
func TestTransportWriteTimeout(t *testing.T) {
	origin, conns := stuckOrigin(t)
	site := fmt.Sprintf(`	reverse_proxy %s {
		transport http {
			write_timeout 300ms
		}
	}`, origin)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				req, _ := http.NewRequest("POST", fmt.Sprintf("https://localhost:%d/upload", port), &endless{n: 256 << 20})
				req.ContentLength = 256 << 20
				start := time.Now()
				resp, err := c.Do(req)
				var conn net.Conn
				select {
				case conn = <-conns:
				case <-time.After(5 * time.Second):
					t.Fatal("the origin got no connection")
				}
				defer conn.Close()
				if err != nil {
					t.Fatalf("POST: %v", err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 504 || !strings.Contains(string(body), "writing the request") {
					t.Errorf("POST: %d %q after %v, want 504 for the blocked write", resp.StatusCode, body, time.Since(start))
				}
				// The origin's connection was reset: what it had not taken
				// is dropped, and reading ends well before the whole body.
				conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				n, err := io.Copy(io.Discard, conn)
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Errorf("origin connection still open after %d bytes", n)
				}
				if n >= 256<<20 {
					t.Errorf("origin got the whole body (%d bytes)", n)
				}
			})
		}
	})
}
