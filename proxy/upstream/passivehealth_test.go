package upstream_test

import (
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// TestUnhealthyResponse: with passive checks on, a response counts as a
// failure by its status (exact or class) or by the latency of its head;
// with them off, never.
func TestUnhealthyResponse(t *testing.T) {
	h := upstream.Health{MaxFails: 1, FailDuration: time.Minute, UnhealthyStatus: []int{5, 429}, UnhealthyLatency: time.Second}
	for _, c := range []struct {
		status  int
		latency time.Duration
		want    bool
	}{
		{200, 0, false}, {503, 0, true}, {500, 0, true}, {429, 0, true}, {428, 0, false},
		{200, time.Second, false}, {200, time.Second + 1, true},
	} {
		if got := h.UnhealthyResponse(c.status, c.latency); got != c.want {
			t.Errorf("%d after %v: unhealthy %v, want %v", c.status, c.latency, got, c.want)
		}
	}
	off := h
	off.FailDuration = 0
	if off.UnhealthyResponse(503, time.Hour) {
		t.Error("passive checks off, and a response counted as a failure")
	}
}

// TestPassiveHealth: max_fails failures remembered take an upstream out
// of rotation until fail_duration forgets them; with passive checks off a
// failure is counted and nothing more.
func TestPassiveHealth(t *testing.T) {
	up := &upstream.Upstream{Name: "app.test:80"}
	h := upstream.Health{MaxFails: 2, FailDuration: 50 * time.Millisecond}
	up.Failed(h, time.Now())
	if !up.Healthy(time.Now()) {
		t.Fatal("one failure of max_fails 2 took it out of rotation")
	}
	up.Failed(h, time.Now())
	if up.Healthy(time.Now()) {
		t.Fatal("max_fails failures remembered, still in rotation")
	}
	// Forgotten on a runtime timer, off the loops: wait for the verdict.
	servertest.Eventually(t, 5*time.Second, "the failures forgotten", func() bool { return up.Healthy(time.Now()) })
	if n := up.Failures.Load(); n != 2 {
		t.Errorf("Failures = %d, want 2", n)
	}

	off := &upstream.Upstream{Name: "app.test:80"}
	for range 5 {
		off.Failed(upstream.Health{MaxFails: 1}, time.Now()) // no fail_duration: off
	}
	if !off.Healthy(time.Now()) || off.Failures.Load() != 5 {
		t.Errorf("passive checks off: healthy %v, failures %d", off.Healthy(time.Now()), off.Failures.Load())
	}
}
