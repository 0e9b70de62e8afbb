package eventually

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestWithin: a condition another goroutine makes true is seen; one that
// never holds is given up on, after a last look.
func TestWithin(t *testing.T) {
	var ready atomic.Bool
	go func() { ready.Store(true) }()
	if !Within(10*time.Second, ready.Load) {
		t.Fatal("a condition that came true was not seen")
	}
	looks := 0
	if Within(0, func() bool { looks++; return false }) {
		t.Fatal("a condition that never holds held")
	}
	if looks != 2 {
		t.Errorf("%d looks at a condition past its bound, want 2 (the first, and a last one)", looks)
	}
	last := 0
	if !Within(0, func() bool { last++; return last == 2 }) {
		t.Error("the last look after the bound does not count")
	}
}
