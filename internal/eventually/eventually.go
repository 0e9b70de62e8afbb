package eventually

import (
	"testing"
	"time"
)

// pollFirst and pollMost bound the pause between two looks at a condition:
// short at first, so a condition that holds almost at once costs almost
// nothing, and growing so a slow one does not spin a loaded machine.
const (
	pollFirst = time.Millisecond
	pollMost  = 20 * time.Millisecond
)

// Within looks at cond until it holds or timeout has passed, and reports
// whether it held. It is for a state another goroutine or process reaches
// on its own (a connection counted, a log line written, a worker idle)
// with nothing to wait on; the timeout only bounds a broken run, it
// asserts nothing about speed.
func Within(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	pause := pollFirst
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(pause)
		pause = min(2*pause, pollMost)
	}
}

// Holds is Within that fails the test, naming what it waited for, when
// cond does not hold by timeout.
func Holds(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(timeout, cond) {
		t.Fatalf("%s: not within %v", what, timeout)
	}
}
