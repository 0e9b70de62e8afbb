package servertest

import (
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/internal/eventually"
)

// Within looks at cond until it holds or timeout has passed, and reports
// whether it held. It is for a state another goroutine or process reaches
// on its own (a connection counted, a log line written, a checker's
// verdict) with nothing to wait on; the timeout only bounds a broken run,
// it asserts nothing about speed. It is internal/eventually's, which the
// tests below proxy/server use directly.
func Within(timeout time.Duration, cond func() bool) bool { return eventually.Within(timeout, cond) }

// Eventually is Within that fails the test, naming what it waited for,
// when cond does not hold by timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	eventually.Holds(t, timeout, what, cond)
}
