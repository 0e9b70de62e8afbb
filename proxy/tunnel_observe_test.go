package proxy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/accesslog"
	"github.com/pollproxy/pollproxy/proxy/metrics"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

type bothObservers struct {
	*metrics.LoopObserver
	log *accesslog.Logger
}

func (b bothObservers) Observe(r *observe.RequestLog) {
	b.LoopObserver.Observe(r)
	b.log.Observe(r)
}

// TestTunnelObserved: an open tunnel is in pollproxy_tunnels_active; when
// it ends, the gauge drops, its bytes are counted each way, and the access
// log gets one line saying how it ended.
func TestTunnelObserved(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o, _ := echoOrigin(t)
		var buf servertest.SyncBuffer
		lg, err := accesslog.New("json", &buf, 64)
		if err != nil {
			t.Fatal(err)
		}
		defer lg.Close()
		m := metrics.New("test")
		cfg := proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}}.WithDefaults()
		st := servertest.Start(t, backend, 1, func(l *netpoll.Loop) stream.Handler {
			c := cfg
			c.Observer = bothObservers{m.ForLoop(l, nil), lg}
			return proxy.NewHandler(l, c)
		}, nil)
		e := &proxyEnv{t: t, group: st.Group, srv: st.Server, addr: st.Addr, roots: st.Roots, cfg: cfg}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c := wsDial(t, ctx, e, e.h1Client(), "/obs")
		waitFor(t, func() bool { return metricSum(t, m, "pollproxy_tunnels_active", "") == 1 }, "one active tunnel")
		for i := 0; i < 3; i++ {
			c.Write(ctx, websocket.MessageText, []byte("0123456789"))
			c.Read(ctx)
		}
		c.Close(websocket.StatusNormalClosure, "")
		line, ok := buf.Await(`"tunnel":true`, 10*time.Second, nil)
		if !ok {
			t.Fatalf("no tunnel line in the access log: %s", line)
		}
		if !strings.Contains(line, `"tunnel_end":"closed"`) || !strings.Contains(line, `"status":101`) {
			t.Fatalf("tunnel line: %s", line)
		}
		if n := metricSum(t, m, "pollproxy_tunnels_active", ""); n != 0 {
			t.Fatalf("active tunnels after the end: %v", n)
		}
		// Three 10-byte messages plus framing and the close frames.
		if in, out := metricSum(t, m, "pollproxy_tunnel_bytes_total", "in"), metricSum(t, m, "pollproxy_tunnel_bytes_total", "out"); in < 30 || out < 30 {
			t.Fatalf("tunnel bytes in %v out %v", in, out)
		}
	})
}

// metricSum adds up a gauge's or counter's series, those with the given
// direction label when direction is set.
func metricSum(t *testing.T, m *metrics.Metrics, name, direction string) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if direction != "" && lp.GetName() == "direction" && lp.GetValue() != direction {
					continue series
				}
			}
			sum += mt.GetGauge().GetValue() + mt.GetCounter().GetValue()
		}
	}
	return sum
}
