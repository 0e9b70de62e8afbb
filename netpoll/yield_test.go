//go:build unix

package netpoll

import (
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// A loop passes through the Go scheduler once per yieldEvery of its own
// time, counted from the wait that ends it, and not in between however
// many iterations it turns.
func TestLoopYieldsOncePerSlice(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		l := newTestLoop(t, name)
		now := time.Now()
		l.now = func() time.Time { return now }
		turn := func(want uint64) {
			t.Helper()
			if err := l.RunOnce(0); err != nil {
				t.Fatal(err)
			}
			if got := l.Stats().Yields; got != want {
				t.Fatalf("after %v of loop time: %d yields, want %d", now.Sub(l.epoch), got, want)
			}
		}
		turn(1) // the first iteration: never yielded before
		for i := 0; i < 5; i++ {
			turn(1)
		}
		now = now.Add(yieldEvery - time.Nanosecond)
		turn(1)
		now = now.Add(time.Nanosecond)
		turn(2)
		turn(2)
		now = now.Add(10 * yieldEvery) // a long wait: one yield, not ten
		turn(3)
		turn(3)
	})
}
