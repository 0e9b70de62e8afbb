package site

import (
	"runtime"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
)

// onLoops runs test once per poller backend that works here, each time
// with a real loop that the test goroutine drives itself (runUntil), so
// that what the pools post back runs on the loop as in production, and
// the handler, its writers and the test never share memory across
// goroutines.
func onLoops(t *testing.T, test func(t *testing.T, l *netpoll.Loop)) {
	t.Helper()
	backends := netpoll.Available()
	if len(backends) == 0 {
		t.Fatal("no poller backend works here")
	}
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			// io_uring binds a ring to the thread of its first wait.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			l, err := netpoll.NewLoop(0, b)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := l.RunOnce(0); err != nil { // sets the loop's clock
				t.Fatal(err)
			}
			test(t, l)
		})
	}
}

// runUntil runs l's iterations until done reports true: each waits for
// the pool's answer to wake the loop. The bound is there for a test that
// fails, never a timing the test relies on.
func runUntil(t *testing.T, l *netpoll.Loop, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal("the loop never got there")
		}
		if err := l.RunOnce(10 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
}
