package netpoll

import (
	"time"

	"github.com/pollproxy/pollproxy/netpoll/internal/clockhook"
)

// A test's clock reaches a loop through clockhook (see netpoll/looptest);
// nothing in netpoll's exported API lets production code replace the time.
func init() {
	clockhook.Install = func(l any, now func() time.Time) {
		lp := l.(*Loop)
		lp.runAndFlush(func() {
			lp.now = now
			lp.clock = now()
		})
	}
	clockhook.Expire = func(l any) { l.(*Loop).runAndFlush(l.(*Loop).runTimers) }
}

// runAndFlush runs f on the loop and returns after the iteration that ran it
// has flushed what f queued: through the task queue while the loop runs,
// directly when it is not running.
func (l *Loop) runAndFlush(f func()) {
	select {
	case <-l.done:
		f()
		return
	default:
	}
	if !l.running.Load() {
		f()
		return
	}
	done := make(chan struct{})
	l.Post(func() {
		f()
		// Tasks posted while tasks run wait for the next iteration, so
		// this one runs after the flushes f asked for.
		l.Post(func() { close(done) })
	})
	select {
	case <-done:
	case <-l.done: // stopped meanwhile: nothing left to wait for
	}
}
