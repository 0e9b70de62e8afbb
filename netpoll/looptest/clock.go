package looptest

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/internal/clockhook"
)

// Clock is the time of the loops it was given. It starts at the system
// time it was made at and then stands still until Advance. Safe from any
// goroutine.
type Clock struct {
	start   time.Time // carries a monotonic reading, so loops' deadlines stay monotonic
	elapsed atomic.Int64
	mu      sync.Mutex // one Advance at a time
	loops   []*netpoll.Loop
}

// NewClock makes a clock and gives it to loops, running or not: from then
// on they read time only from it. Timers they had pending keep their
// deadlines and fire once the clock reaches them.
func NewClock(loops ...*netpoll.Loop) *Clock {
	c := &Clock{start: time.Now(), loops: loops}
	for _, l := range loops {
		clockhook.Install(l, c.Now)
	}
	return c
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return c.start.Add(time.Duration(c.elapsed.Load())) }

// Advance moves the clock on by d and has every loop run the timers due
// by then. It returns once they have run and what they wrote has been
// flushed toward the sockets, so a test can go on to read its effects.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.elapsed.Add(int64(d))
	for _, l := range c.loops {
		clockhook.Expire(l)
	}
}
