package proxy_test

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// TestActiveHealth: an upstream the active checks hold down is skipped by
// the balancer on every loop, and used again once its checks pass. The
// checks themselves (statuses, bodies, headers, counts) are tested in
// proxy/upstream.
func TestActiveHealth(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		var sick atomic.Bool
		a := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "A") })
		b := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/healthz" {
				io.WriteString(w, "B")
			} else if sick.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		})
		upA, upB := upstreamAt(t, a.addr), upstreamAt(t, b.addr)
		e := startProxy(t, backend, 2, proxy.Config{Upstreams: []*upstream.Upstream{upA, upB}})

		hc := upstream.NewHealthChecker()
		defer hc.Close()
		hc.Update(map[*upstream.Upstream]upstream.ActiveHealth{upB: {URI: "/healthz", Interval: 20 * time.Millisecond}})

		seen := func(n int) map[string]int {
			t.Helper()
			m := map[string]int{}
			for range n {
				// A fresh client each time: connections land on both loops.
				_, body := get(t, e.h2Client(nil), "https://localhost/")
				m[string(body)]++
			}
			return m
		}
		if m := seen(10); m["A"] == 0 || m["B"] == 0 {
			t.Fatalf("healthy: %v, want both", m)
		}
		sick.Store(true)
		waitFor(t, upB.Unhealthy, "B's checks to fail")
		if m := seen(10); m["B"] != 0 {
			t.Fatalf("B unhealthy: %v, want A only", m)
		}
		sick.Store(false)
		waitFor(t, func() bool { return !upB.Unhealthy() }, "B's checks to pass")
		if m := seen(10); m["A"] == 0 || m["B"] == 0 {
			t.Fatalf("B healthy again: %v, want both", m)
		}
	})
}
