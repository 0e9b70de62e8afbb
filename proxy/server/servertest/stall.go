package servertest

import (
	"sync/atomic"
	"time"
)

// AwaitStall waits until a writer that counts its progress in written
// (an origin held back by a paused client) stops making progress, and
// returns how much it wrote.
func AwaitStall(written *atomic.Int64) int64 {
	last := int64(-1)
	for i := 0; i < 100; i++ {
		// Real time: what stalls is the writer's writes, once the
		// kernel's buffers are full, and nothing reports that; no proxy
		// timer is involved, so no test clock can stand in for the wait.
		time.Sleep(20 * time.Millisecond)
		if w := written.Load(); w == last {
			break
		} else {
			last = w
		}
	}
	return written.Load()
}
