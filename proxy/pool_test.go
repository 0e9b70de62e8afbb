package proxy

import (
	"bufio"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// poolTestWriter records one response and the order it finished in.
type poolTestWriter struct {
	id       int
	finished *[]int
	status   int
	body     []byte
}

func (w *poolTestWriter) WriteHeader(status int, _ []stream.Field, end bool) error {
	w.status = status
	if end {
		*w.finished = append(*w.finished, w.id)
	}
	return nil
}
func (w *poolTestWriter) Write(p []byte) (int, error) {
	w.body = append(w.body, p...)
	return len(p), nil
}
func (w *poolTestWriter) Close([]stream.Field) error {
	*w.finished = append(*w.finished, w.id)
	return nil
}
func (w *poolTestWriter) Reset(uint32) { *w.finished = append(*w.finished, -w.id) }
func (w *poolTestWriter) Consumed(int) {}

// poolTestOrigin answers every request with "ok", closing the connection
// after each response when closeEach is set; conns counts connections.
func poolTestOrigin(t *testing.T, closeEach bool) (netip.AddrPort, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if strings.TrimSpace(line) != "" {
						continue
					}
					if closeEach {
						c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"))
						return
					}
					c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
				}
			}()
		}
	}()
	return netip.MustParseAddrPort(ln.Addr().String()), &conns
}

// TestPoolQueueOrder: with one connection allowed, queued requests are
// served in arrival order, both when the connection is released for reuse
// and when it is closed and replaced, and never from inside the call that
// freed the slot.
func TestPoolQueueOrder(t *testing.T) {
	for _, closeEach := range []bool{false, true} {
		name := "reuse"
		if closeEach {
			name = "replace"
		}
		t.Run(name, func(t *testing.T) {
			addr, conns := poolTestOrigin(t, closeEach)
			l := startedLoop(t)
			up := &upstream.Upstream{Name: addr.String(), Addr: addr}
			h := NewHandler(l, Config{Upstreams: []*upstream.Upstream{up}, Pool: PoolConfig{MaxConns: 1}}.WithDefaults())
			var finished []int
			const n = 4
			ws := make([]*poolTestWriter, n)
			for i := range ws {
				ws[i] = &poolTestWriter{id: i + 1, finished: &finished}
				h.Serve(&stream.Request{Method: "GET", Scheme: "https", Authority: "a", Path: "/", Proto: "HTTP/1.1"}, ws[i])
			}
			p := h.group.pools[0]
			if len(p.waiters) != n-1 {
				t.Fatalf("%d waiters, want %d", len(p.waiters), n-1)
			}
			deadline := time.Now().Add(5 * time.Second)
			for len(finished) < n && time.Now().Before(deadline) {
				before := len(finished)
				waiting := len(p.waiters)
				if err := l.RunOnce(10 * time.Millisecond); err != nil {
					t.Fatal(err)
				}
				// A response that finished in this iteration left its
				// successor waiting until the iteration's flush.
				if len(finished) > before && len(p.waiters) == waiting && waiting > 0 {
					t.Fatalf("a response finished but no waiter was served in the same iteration")
				}
			}
			for i, id := range finished {
				if id != i+1 {
					t.Fatalf("finished in order %v, want 1..%d", finished, n)
				}
			}
			if len(finished) != n {
				t.Fatalf("finished %v, want %d responses", finished, n)
			}
			for _, w := range ws {
				if w.status != 200 || string(w.body) != "ok" {
					t.Errorf("response %d: %d %q", w.id, w.status, w.body)
				}
			}
			want := int32(1)
			if closeEach {
				want = n
			}
			if c := conns.Load(); c != want {
				t.Errorf("origin saw %d connections, want %d", c, want)
			}
		})
	}
}

// startedLoop returns a loop on the first available poller, closed with the
// test, after one pass so that its clock is set: the tests and benchmarks
// then drive it themselves with RunOnce.
func startedLoop(tb testing.TB) *netpoll.Loop {
	tb.Helper()
	l, err := netpoll.NewLoop(0, netpoll.Available()[0])
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	if err := l.RunOnce(0); err != nil {
		tb.Fatal(err)
	}
	return l
}
