package proxy_test

import (
	"io"
	"net/http"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// awaitHealth waits for the active checks to give up's verdict.
func awaitHealth(t *testing.T, up *upstream.Upstream, unhealthy bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for up.Unhealthy() != unhealthy {
		if time.Now().After(deadline) {
			t.Fatalf("%s: unhealthy %v, want %v", up.Name, up.Unhealthy(), unhealthy)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestActiveHealth: an upstream whose health URI fails (status or body)
// health_fails times is taken out of rotation on every loop, and put back
// after health_passes good checks; the checks carry health_headers, and
// run once per upstream however many loops serve it.
func TestActiveHealth(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		var sick atomic.Bool
		var checks atomic.Int64
		var checkHost atomic.Value
		health := func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path != "/healthz" {
				return false
			}
			checks.Add(1)
			checkHost.Store(r.Host + " " + r.Header.Get("X-Check"))
			if sick.Load() {
				io.WriteString(w, "sick") // 200, but the body does not match
			} else {
				io.WriteString(w, "ok")
			}
			return true
		}
		a := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "A") })
		b := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			if !health(w, r) {
				io.WriteString(w, "B")
			}
		})
		upA, upB := upstreamAt(t, a.addr), upstreamAt(t, b.addr)
		e := startProxy(t, backend, 2, proxy.Config{Upstreams: []*upstream.Upstream{upA, upB}})

		hc := upstream.NewHealthChecker()
		defer hc.Close()
		cfg := upstream.ActiveHealth{URI: "/healthz", Interval: 20 * time.Millisecond, Timeout: time.Second,
			Body: regexp.MustCompile(`^ok$`), Passes: 2, Fails: 2,
			Headers: http.Header{"Host": {"health.internal"}, "X-Check": {"1"}}}
		hc.Update(map[*upstream.Upstream]upstream.ActiveHealth{upB: cfg})

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
		if h, _ := checkHost.Load().(string); h != "health.internal 1" {
			t.Errorf("check asked for host and X-Check %q", h)
		}

		sick.Store(true)
		awaitHealth(t, upB, true)
		if m := seen(10); m["B"] != 0 {
			t.Fatalf("B unhealthy: %v, want A only", m)
		}
		sick.Store(false)
		awaitHealth(t, upB, false)
		if m := seen(10); m["A"] == 0 || m["B"] == 0 {
			t.Fatalf("B healthy again: %v, want both", m)
		}

		// One checker per upstream: at 20 ms, 300 ms give about 15 checks,
		// not one series per loop.
		before := checks.Load()
		time.Sleep(300 * time.Millisecond)
		if n := checks.Load() - before; n > 20 {
			t.Errorf("%d checks in 300 ms at a 20 ms interval", n)
		}

		// Removed from the checker, an upstream is back in rotation.
		sick.Store(true)
		awaitHealth(t, upB, true)
		hc.Update(nil)
		if upB.Unhealthy() {
			t.Fatal("B still out of rotation after its checks stopped")
		}
	})
}
