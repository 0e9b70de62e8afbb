package hardening

import (
	"bufio"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
)

// badOrigin answers each request head it reads with behave(conn, n), n
// counting requests on that connection from 1; behave returns false to
// end the connection.
func badOrigin(t testing.TB, behave func(c *net.TCPConn, n int) bool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for n := 1; ; n++ {
					for { // the head; these tests send no bodies
						l, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if l == "\r\n" {
							break
						}
					}
					if !behave(c.(*net.TCPConn), n) {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func reset(c *net.TCPConn) bool {
	c.SetLinger(0)
	c.Close()
	return false
}

const okResponse = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// tOriginTimeout is the proxy's response-header and read timeout in
// TestFailingOrigins: short, because the stalling origins wait it out
// twice on every backend.
const tOriginTimeout = 400 * time.Millisecond

// stall holds c without answering until pollproxy closes it (or a bound
// far past any timeout here passes), so the origin's descriptor goes as
// soon as pollproxy gives the connection up.
func stall(c *net.TCPConn) {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	io.Copy(io.Discard, c)
}

// Failing origins: each gives the client the right answer (502, 504, or a
// stream reset once the response has started), and after them pollproxy's
// descriptors and heap return to their baseline.
func TestFailingOrigins(t *testing.T) {
	closedPort := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		a := ln.Addr().String()
		ln.Close()
		return a
	}
	cases := []struct {
		name   string
		origin func(t *testing.T) string
		path   string
		// want is the status, or "reset" for a RST_STREAM after a 200 head,
		// and then the status of a second request on the same origin.
		want, again string
	}{
		{"refused", func(t *testing.T) string { return closedPort(t) }, "/", "502", "502"},
		{"reset mid-headers", func(t *testing.T) string {
			return badOrigin(t, func(c *net.TCPConn, n int) bool {
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Le"))
				return reset(c)
			})
		}, "/", "502", "502"},
		{"reset mid-body", func(t *testing.T) string {
			return badOrigin(t, func(c *net.TCPConn, n int) bool {
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + strings.Repeat("x", 1000)))
				time.Sleep(50 * time.Millisecond)
				return reset(c)
			})
		}, "/", "reset", "reset"},
		{"closed mid-body", func(t *testing.T) string {
			return badOrigin(t, func(c *net.TCPConn, n int) bool {
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + strings.Repeat("x", 1000)))
				return false
			})
		}, "/", "reset", "reset"},
		{"never answering", func(t *testing.T) string {
			return badOrigin(t, func(c *net.TCPConn, n int) bool {
				stall(c)
				return false
			})
		}, "/", "504", "504"},
		{"garbage", func(t *testing.T) string {
			return badOrigin(t, func(c *net.TCPConn, n int) bool {
				c.Write([]byte("SSH-2.0-OpenSSH\r\n\r\n\x00\x01\x02"))
				return false
			})
		}, "/", "502", "502"},
		{"bad content-length", func(t *testing.T) string {
			return badOrigin(t, func(c *net.TCPConn, n int) bool {
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok"))
				return false
			})
		}, "/", "502", "502"},
		{"closes a pooled connection when it is reused", func(t *testing.T) string {
			return badOrigin(t, func(c *net.TCPConn, n int) bool {
				if n > 1 {
					return reset(c) // the reused connection dies on the request
				}
				c.Write([]byte(okResponse))
				return true
			})
		}, "/", "200", "200"},
		{"slow drip head", func(t *testing.T) string {
			return badOrigin(t, func(c *net.TCPConn, n int) bool {
				for _, b := range []byte(okResponse) {
					if _, err := c.Write([]byte{b}); err != nil {
						return false
					}
					time.Sleep(tOriginTimeout / 8) // progress, but no head in time
				}
				return false
			})
		}, "/", "504", "504"},
		{"slow drip body", func(t *testing.T) string {
			return badOrigin(t, func(c *net.TCPConn, n int) bool {
				// Typed: a response without Content-Type keeps its head
				// until the bytes its type is sniffed from arrive, as
				// Caddy's does, and this case is about the body's timeout.
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nx"))
				stall(c) // past the read timeout
				c.Write([]byte("y"))
				return false
			})
		}, "/", "reset", "reset"},
	}

	timeouts := func(c *proxy.Config) { c.ResponseHeaderTimeout, c.ReadTimeout = tOriginTimeout, tOriginTimeout }
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := startProxy(t, backend, tc.origin(t), setup{proxy: timeouts})
				time.Sleep(50 * time.Millisecond)
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				heap0, fds0 := ms.HeapInuse, openFDs(t)
				rc := e.dialH2(t)

				for i, want := range []string{tc.want, tc.again} {
					id := uint32(2*i + 1)
					t0 := time.Now()
					rc.headers(id, true, getReq(e, tc.path)...)
					ev := rc.response(id)
					got := ev.status
					if want == "reset" {
						if ev.status != "200" {
							t.Fatalf("request %d: %+v, want a 200 head then a reset", i, ev)
						}
						ev, _ = rc.wait(5*time.Second, func(ev frameEv) bool {
							return ev.id == id && (ev.typ == http2.FrameRSTStream || ev.flags.Has(http2.FlagDataEndStream))
						})
						got = "end of stream"
						if ev.typ == http2.FrameRSTStream {
							got = "reset"
						}
					}
					t.Logf("request %d: %s after %v", i, got, time.Since(t0).Round(time.Millisecond))
					if got != want {
						t.Fatalf("request %d: %s (%+v), want %s", i, got, ev, want)
					}
				}
				rc.conn.Close()
				// Backend connections go at once or at the pool's idle timeout,
				// the client's when it is closed.
				var fds int
				var heap uint64
				ok := eventually(5*time.Second, func() bool {
					fds = openFDs(t)
					runtime.GC()
					runtime.ReadMemStats(&ms)
					heap = ms.HeapInuse
					return fds <= fds0 && heap <= heap0+4<<20
				})
				t.Logf("descriptors %d -> %d, heap %.1f -> %.1f MiB", fds0, fds, mib(heap0), mib(heap))
				if !ok {
					t.Errorf("leak: descriptors %d -> %d, heap %.1f -> %.1f MiB", fds0, fds, mib(heap0), mib(heap))
				}
				if n := e.srv.Stats().Active; n != 0 {
					t.Errorf("%d client connections still active", n)
				}
			})
		}
	})
}
