package streamtest

import (
	"slices"
	"time"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Clock is a stream.Clock the test drives: Now stands still until Advance,
// and timers fire only from Advance, earliest deadline first (ties in the
// order they were set), each at its own time. It is not safe for
// concurrent use: like the loop it stands in for, one goroutine (or one
// mutex) owns it.
type Clock struct {
	now    time.Time
	seq    uint64
	timers []*timer // pending, in no order

	// OnSet, when not nil, is called after every AfterFunc: a test that
	// plays the passage of time from another goroutine wakes on it.
	OnSet func()
}

type timer struct {
	c       *Clock
	when    time.Time
	seq     uint64
	f       func()
	stopped bool
}

var _ stream.ResettableTimer = (*timer)(nil)

// Reset implements stream.ResettableTimer: the timer fires d after the
// clock's now, pending or not before.
func (t *timer) Reset(d time.Duration) bool {
	was := !t.stopped
	c := t.c
	c.seq++
	t.when, t.seq = c.now.Add(d), c.seq
	if !was {
		t.stopped = false
		if !slices.Contains(c.timers, t) { // a stopped timer is dropped lazily
			c.timers = append(c.timers, t)
		}
	}
	if c.OnSet != nil {
		c.OnSet()
	}
	return was
}

// Stop implements stream.Timer.
func (t *timer) Stop() bool {
	was := !t.stopped
	t.stopped = true
	return was
}

// NewClock returns a clock that reads start until advanced.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now implements stream.Clock.
func (c *Clock) Now() time.Time { return c.now }

// AfterFunc implements stream.Clock: f runs from the Advance that passes
// now+d.
func (c *Clock) AfterFunc(d time.Duration, f func()) stream.Timer {
	c.seq++
	t := &timer{c: c, when: c.now.Add(d), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	if c.OnSet != nil {
		c.OnSet()
	}
	return t
}

// Next reports the deadline of the earliest pending timer, if any.
func (c *Clock) Next() (time.Time, bool) {
	if t := c.next(); t != nil {
		return t.when, true
	}
	return time.Time{}, false
}

// Pending counts the timers still to fire.
func (c *Clock) Pending() int {
	c.next()
	return len(c.timers)
}

// Advance moves the clock on by d, firing every timer that falls due on
// the way — those the callbacks set too — each at its own deadline and
// through step, which runs it as one iteration of the test's loop (and
// delivers whatever the loop owes after it). A nil step runs it alone.
func (c *Clock) Advance(d time.Duration, step func(f func())) {
	end := c.now.Add(d)
	for {
		t := c.next()
		if t == nil || t.when.After(end) {
			break
		}
		if t.when.After(c.now) {
			c.now = t.when
		}
		t.stopped = true
		if step != nil {
			step(t.f)
		} else {
			t.f()
		}
	}
	c.now = end
}

// next returns the earliest pending timer, dropping stopped ones.
func (c *Clock) next() *timer {
	var first *timer
	live := c.timers[:0]
	for _, t := range c.timers {
		if t.stopped {
			continue
		}
		live = append(live, t)
		if first == nil || t.when.Before(first.when) || t.when.Equal(first.when) && t.seq < first.seq {
			first = t
		}
	}
	clear(c.timers[len(live):])
	c.timers = live
	return first
}
