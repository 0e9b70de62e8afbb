package looptest_test

import (
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/looptest"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// onLoop runs f on the loop and waits for it.
func onLoop(l *netpoll.Loop, f func()) {
	done := make(chan struct{})
	l.Post(func() { f(); close(done) })
	<-done
}

// TestClockDrivesTimers: on a running loop given a Clock, a timer fires
// exactly when Advance reaches its deadline (Advance returns after it
// ran), never on its own; a timer armed before the clock was given keeps
// its deadline; the loop's Now is the clock's.
func TestClockDrivesTimers(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		l, err := netpoll.NewLoop(0, backend)
		if err != nil {
			t.Fatal(err)
		}
		go l.Run()
		t.Cleanup(func() { l.Stop(); <-l.Done(); l.Close() })

		var fired []string // written on the loop, read between Advances
		rec := func(name string) func() { return func() { fired = append(fired, name) } }
		onLoop(l, func() { l.AfterFunc(time.Hour, rec("before")) })
		c := looptest.NewClock(l)
		var at time.Time
		onLoop(l, func() {
			at = l.Now()
			l.AfterFunc(100*time.Millisecond, rec("a"))
			l.AfterFunc(300*time.Millisecond, rec("b"))
		})
		if !at.Equal(c.Now()) {
			t.Fatalf("loop Now %v, clock %v", at, c.Now())
		}
		step := func(d time.Duration, want ...string) {
			t.Helper()
			c.Advance(d)
			var got []string
			onLoop(l, func() { got = fired; fired = nil })
			if len(got) != len(want) || len(got) > 0 && got[0] != want[0] {
				t.Fatalf("after %v more: fired %v, want %v", d, got, want)
			}
		}
		step(100*time.Millisecond - 1)
		step(1, "a")
		step(199 * time.Millisecond)
		step(time.Millisecond, "b")
		step(time.Hour, "before")
		onLoop(l, func() { at = l.Now() })
		if !at.Equal(c.Now()) {
			t.Fatalf("loop Now %v after Advance, clock %v", at, c.Now())
		}
	})
}
