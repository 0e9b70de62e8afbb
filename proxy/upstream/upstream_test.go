package upstream_test

import (
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// TestLearnIdleClose: the idle cap learned from the origin's closes sits
// below the idle time the origin allowed, never below the floor, and only
// ever goes down.
func TestLearnIdleClose(t *testing.T) {
	up := &upstream.Upstream{Name: "app.test:80"}
	if up.IdleCap() != 0 {
		t.Fatalf("IdleCap %v before any close", up.IdleCap())
	}
	up.LearnIdleClose(4 * time.Second)
	if got, want := up.IdleCap(), upstream.IdleBelow(4*time.Second); got != want || got >= 4*time.Second {
		t.Fatalf("after a close at 4s: IdleCap %v, want %v (below 4s)", got, want)
	}
	up.LearnIdleClose(10 * time.Second) // an older connection's close: no rise
	if got := up.IdleCap(); got != upstream.IdleBelow(4*time.Second) {
		t.Errorf("a longer idle close raised the cap to %v", got)
	}
	up.LearnIdleClose(time.Millisecond) // an origin closing at once: the floor
	if got := up.IdleCap(); got <= 0 || got > 4*time.Second {
		t.Errorf("a close at 1ms: IdleCap %v, want the floor", got)
	}
	floor := up.IdleCap()
	up.LearnIdleClose(0)
	if up.IdleCap() != floor {
		t.Errorf("IdleCap went under its floor %v: %v", floor, up.IdleCap())
	}
}

// TestIdleBelow: pollproxy's idle timeout is at least a quarter, and at
// least 100 ms, under the origin's.
func TestIdleBelow(t *testing.T) {
	for origin, want := range map[time.Duration]time.Duration{
		4 * time.Second:        3 * time.Second,
		time.Minute:            45 * time.Second,
		200 * time.Millisecond: 100 * time.Millisecond,
	} {
		if got := upstream.IdleBelow(origin); got != want {
			t.Errorf("IdleBelow(%v) = %v, want %v", origin, got, want)
		}
	}
}

// TestHostPort: {upstream_hostport} is the configured host:port, or a
// Unix socket's path.
func TestHostPort(t *testing.T) {
	if got := (&upstream.Upstream{Name: "app.internal:8080"}).HostPort(); got != "app.internal:8080" {
		t.Errorf("HostPort %q", got)
	}
	if got := (&upstream.Upstream{Name: "unix//run/app.sock", Path: "/run/app.sock"}).HostPort(); got != "/run/app.sock" {
		t.Errorf("HostPort of a socket %q", got)
	}
}
