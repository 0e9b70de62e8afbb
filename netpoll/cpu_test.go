//go:build unix

package netpoll

import (
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// TestLoopCPU: the CPU a loop's thread burns shows in its CPU and Stats,
// and the CPU of a loop that did nothing does not move by as much.
func TestLoopCPU(t *testing.T) {
	if !ThreadCPUSupported {
		t.Skip("no per-thread CPU clock on this OS")
	}
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		busy, idle := newTestLoop(t, name), newTestLoop(t, name)
		runLoop(t, busy)
		runLoop(t, idle)
		refresh := func(l *Loop) time.Duration {
			done := make(chan struct{})
			l.RefreshCPU(func() { close(done) })
			<-done
			return l.CPU()
		}
		busy0, idle0 := refresh(busy), refresh(idle)
		const burn = 30 * time.Millisecond
		onLoop(busy, func() {
			// Spin until this thread's own clock says burn has passed:
			// what the loop reports must be at least that.
			start := threadCPU()
			for threadCPU()-start < int64(burn) {
			}
		})
		busy1, idle1 := refresh(busy), refresh(idle)
		if d := busy1 - busy0; d < burn {
			t.Errorf("busy loop's CPU grew by %v, want >= %v", d, burn)
		}
		if d := idle1 - idle0; d >= burn {
			t.Errorf("idle loop's CPU grew by %v, as much as the busy one's burn", d)
		}
		if s := busy.Stats(); s.CPU != busy.CPU() {
			t.Errorf("Stats.CPU %v != CPU() %v", s.CPU, busy.CPU())
		}
	})
}
