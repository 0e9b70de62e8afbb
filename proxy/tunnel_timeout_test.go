package proxy_test

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/server"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// startTunnelProxy runs pollproxy with short client-side timers (h1
// header and idle, h2 idle), which must never close a tunnel.
func startTunnelProxy(t *testing.T, backend string, cfg proxy.Config) *proxyEnv {
	cfg = cfg.WithDefaults()
	st := servertest.Start(t, backend, 1, func(l *netpoll.Loop) stream.Handler {
		return proxy.NewHandler(l, cfg)
	}, func(sc *server.Config) {
		sc.H1.HeaderTimeout = 100 * time.Millisecond
		sc.H1.IdleTimeout = 100 * time.Millisecond
		sc.H2.IdleTimeout = 100 * time.Millisecond
	})
	return &proxyEnv{t: t, group: st.Group, srv: st.Server, addr: st.Addr, roots: st.Roots, cfg: cfg}
}

// TestTunnelTimers: a quiet tunnel outlives the front ends' request and
// idle timers (h1 and RFC 8441 on h2); stream_timeout closes one that
// stays quiet that long, and not a moment before. The loop's clock is the
// test's: the quiet spells are steps of it, not sleeps.
func TestTunnelTimers(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o, _ := echoOrigin(t)
		up := upstreamAt(t, o.addr)
		const streamTimeout = 600 * time.Millisecond
		e := startTunnelProxy(t, backend, proxy.Config{Upstreams: []*upstream.Upstream{up},
			StreamTimeout: streamTimeout})
		clock := e.manualClock()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()

		// HTTP/1.1: quiet for 4× the idle timer, under stream_timeout. The
		// echo is read back before each step, so the bytes have moved
		// both ways (and the tunnel's timer restarted) by then.
		c := wsDial(t, ctx, e, e.h1Client(), "/")
		for i := 0; i < 3; i++ {
			clock.Advance(400 * time.Millisecond)
			if err := c.Write(ctx, websocket.MessageText, []byte("tick")); err != nil {
				t.Fatalf("h1 write after a quiet spell: %v", err)
			}
			if _, m, err := c.Read(ctx); err != nil || string(m) != "tick" {
				t.Fatalf("h1 echo after a quiet spell: %q %v", m, err)
			}
		}
		// Then quiet up to stream_timeout (and not a moment less): closed.
		advancePast(t, clock, streamTimeout, up, 1, "h1 tunnel")
		if _, _, err := c.Read(ctx); err == nil {
			t.Fatal("h1 read: a tunnel quiet past stream_timeout stayed open")
		}

		// h2 (RFC 8441): the connection's idle timer never fires while
		// the tunnel stream is open.
		h := dialH2Raw(t, e.addr, e.tlsConfig("h2"))
		h.connect(1, "websocket", "sec-websocket-version", "13")
		if st, _ := h.status(1); st != "200" {
			t.Fatalf("status %s", st)
		}
		var buf []byte
		for i := 0; i < 3; i++ {
			clock.Advance(400 * time.Millisecond)
			h.fr.WriteData(1, false, wsFrame(1, []byte("tock")))
			for {
				op, p, rest, ok := wsParse(buf)
				if ok {
					if op != 1 || string(p) != "tock" {
						t.Fatalf("h2 echo: %d %q", op, p)
					}
					buf = rest
					break
				}
				d, end, rst := h.readData(1, 1)
				if end || rst != 0 {
					t.Fatalf("h2 tunnel ended after a quiet spell (rst %v)", rst)
				}
				buf = append(buf, d...)
			}
		}
		advancePast(t, clock, streamTimeout, up, 1, "h2 tunnel")
		if _, _, rst := h.readData(1, -1); rst == 0 {
			t.Fatal("h2: a tunnel quiet past stream_timeout was not reset")
		}
	})
}
