package proxy

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// benchResponse is the origin's answer to every request: 1 KiB, kept alive.
var benchResponse = append([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1024\r\n\r\n"),
	make([]byte, 1024)...)

// benchOrigin is an HTTP/1.1 origin on loopback that answers every request
// head (requests without a body) with benchResponse from fixed buffers. It
// allocates nothing per request, so a benchmark's allocations are the
// proxy's.
func benchOrigin(b *testing.B) netip.AddrPort {
	b.Helper()
	addr := servertest.ServeConns(b, func(c net.Conn) {
		buf := make([]byte, 16<<10)
		matched := 0 // bytes of "\r\n\r\n" seen at the end so far
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			heads := 0
			for _, ch := range buf[:n] {
				switch {
				case ch == "\r\n\r\n"[matched]:
					matched++
				case ch == '\r':
					matched = 1
				default:
					matched = 0
				}
				if matched == 4 {
					heads++
					matched = 0
				}
			}
			for range heads {
				if _, err := c.Write(benchResponse); err != nil {
					return
				}
			}
		}
	})
	return netip.MustParseAddrPort(addr)
}

// benchWriter is a front end's ResponseWriter that keeps nothing.
type benchWriter struct {
	status int
	n      int
	done   bool
}

func (w *benchWriter) WriteHeader(status int, _ []stream.Field, end bool) error {
	w.status, w.done = status, end
	return nil
}
func (w *benchWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }
func (w *benchWriter) Close([]stream.Field) error  { w.done = true; return nil }
func (w *benchWriter) Reset(uint32)                { w.done = true }
func (w *benchWriter) Consumed(int)                {}

// BenchmarkExchange proxies one GET per iteration through a Handler on a
// real loop to a real origin connection on loopback (kept alive, from the
// pool): translation, the request head, the response parsed, the exchange's
// timers. "released" is the front end telling the handler it is done
// (stream.Releaser), as both front ends do, so the exchange is reused;
// "kept" is a front end that never does.
func BenchmarkExchange(b *testing.B) {
	b.Run("released", func(b *testing.B) { benchExchange(b, true) })
	b.Run("kept", func(b *testing.B) { benchExchange(b, false) })
}

func benchExchange(b *testing.B, release bool) {
	addr := benchOrigin(b)
	l := startedLoop(b)
	h := NewHandler(l, Config{Upstreams: []*upstream.Upstream{{Name: addr.String(), Addr: addr}}}.WithDefaults())
	benchRequests(b, l, h, release)
}

// benchRequests runs b.N GETs of a 1 KiB response through h on l, after
// two that set up the connection and the pool's buffers.
func benchRequests(b *testing.B, l *netpoll.Loop, h *Handler, release bool) {
	benchBodies(b, l, h, release, nil)
}

// benchBodies is benchRequests with body: POSTs of it, delivered as a
// front end does in one piece with the head.
func benchBodies(b *testing.B, l *netpoll.Loop, h *Handler, release bool, body []byte) {
	req := &stream.Request{Method: "GET", Scheme: "https", Authority: "bench.test", Path: "/1k.txt",
		Header: []stream.Field{{Name: "user-agent", Value: "bench/1.0"}, {Name: "accept", Value: "*/*"}},
		Proto:  "HTTP/2.0", ContentLength: -1, RemoteAddr: netip.MustParseAddrPort("127.0.0.1:40000")}
	if body != nil {
		req.Method, req.HasBody = "POST", true
	}
	w := &benchWriter{}
	one := func() {
		w.done, w.n = false, 0
		ev := h.Serve(req, w)
		if body != nil {
			ev.OnBody(body)
			ev.OnBodyEnd(nil)
		}
		deadline := time.Now().Add(5 * time.Second)
		// A front end serves inside an iteration, whose end runs the
		// flushes Serve asked for: here the first RunOnce does, at once.
		wait := time.Duration(0)
		for !w.done {
			if err := l.RunOnce(wait); err != nil {
				b.Fatal(err)
			}
			wait = time.Second
			if time.Now().After(deadline) {
				b.Fatal("no response within 5s")
			}
		}
		if w.status != 200 || w.n != 1024 {
			b.Fatalf("status %d, %d body bytes", w.status, w.n)
		}
		if r, ok := ev.(stream.Releaser); ok && release {
			r.OnRelease()
		}
	}
	one() // the connection, the pool's buffers
	one()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		one()
	}
}
