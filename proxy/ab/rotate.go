package ab

import (
	"time"
)

// The crossover design. With two pollers named, a fixed split compares
// two sets of loops, and the kernel's SO_REUSEPORT hash decides which
// connections each set holds; a busier loop batches more events per wait
// and looks cheaper per request whatever its poller. In the crossover
// every loop alternates between the two pollers on a schedule (ab_rotate),
// half the loops starting on each, through the live switch; the judge
// then compares each loop with itself (crossover.go).
//
// The schedule is counted in sampling intervals: a rotation happens right
// after the sample that ends a period, so the interval after it holds the
// switch and is left out (the washout: re-registration and the first
// waits on the new poller are neither poller's steady state). A period is
// therefore at least two intervals, one of them kept.

// DefaultRotateIntervals is the rotation period, in sampling intervals,
// when ab_rotate is not set: 30 s at the default 10 s interval, two of
// its three intervals kept.
const DefaultRotateIntervals = 3

// MaxPeriods bounds the crossover's history of loop periods: more than a
// day of 30 s periods on eight loops. The verdict is over the periods
// kept.
const MaxPeriods = 50000

// Period is what one loop did on one poller between two rotations: the
// figures of its kept intervals (Sample's fields, for one loop), which
// position of the poller line it served, and when.
type Period struct {
	Sample
	Period int `json:"period"` // since the comparison began, from 0
	Loop   int `json:"loop"`
	Arm    int `json:"arm"`            // 0: the first poller named, 1: the second
	First  int `json:"first_interval"` // its first kept interval; Sample.Interval is its last
	Kept   int `json:"kept_intervals"`
}

// crossover is the sampler's rotation state; the Sampler's mu guards it.
type crossover struct {
	rotate  time.Duration // ab_rotate: 0 the default, < 0 off
	every   int           // intervals per period; 0: not rotating (a fixed split)
	phase   int           // loop i serves position (i + phase) % 2
	period  int           // the open period's number
	since   int           // intervals sampled in the open period
	open    []periodAcc   // per loop
	periods []Period      // closed, oldest first
}

type periodAcc struct {
	delta       loopDelta
	kept        int
	first, last int
	label       string
	backend     string
	seconds     float64
	end         time.Time
}

// SetRotate sets the crossover's period (ab_rotate): 0 for the default of
// DefaultRotateIntervals intervals, a negative duration for none (the
// fixed split). It is rounded to whole sampling intervals, at least two.
// Call it before Start. The crossover runs only when the poller line
// names exactly two pollers.
func (s *Sampler) SetRotate(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cross.rotate = d
	s.cross.restart(s.pollers, s.interval, s.loopCount())
}

// Rotation is the crossover's period, or 0 in a fixed split.
func (s *Sampler) Rotation() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Duration(s.cross.every) * s.interval
}

// restart begins a new comparison for the poller line: the schedule from
// phase 0 (which is how NewGroup and Group.Switch place the line's
// pollers) and no periods.
func (c *crossover) restart(pollers []string, interval time.Duration, loops int) {
	c.every = 0
	if len(pollers) == 2 && c.rotate >= 0 {
		c.every = DefaultRotateIntervals
		if c.rotate > 0 {
			c.every = max(2, int((c.rotate+interval/2)/interval))
		}
	}
	c.phase, c.period, c.since, c.periods = 0, 0, 0, nil
	c.open = make([]periodAcc, loops)
}

// add counts one kept interval of loop i into its open period.
func (c *crossover) add(i int, label string, st loopState, d loopDelta, seq int, took time.Duration, now time.Time) {
	if c.every == 0 || i >= len(c.open) {
		return
	}
	a := &c.open[i]
	if a.kept == 0 {
		a.first = seq
	}
	a.delta.add(&d)
	a.kept++
	a.last, a.label, a.backend, a.end = seq, label, st.backend, now
	a.seconds += took.Seconds()
}

// closePeriods ends every loop's open period, keeping those with a kept
// interval.
func (c *crossover) closePeriods() {
	for i := range c.open {
		a := &c.open[i]
		if a.kept > 0 {
			p := Period{Sample: a.delta.sample(), Period: c.period, Loop: i, Arm: (i + c.phase) % 2, First: a.first, Kept: a.kept}
			p.Interval, p.End, p.Group, p.Poller, p.Loops, p.Seconds = a.last, a.end, a.label, a.backend, 1, a.seconds
			c.periods = append(c.periods, p)
		}
		*a = periodAcc{}
	}
	if n := len(c.periods) - MaxPeriods; n > 0 {
		c.periods = append(c.periods[:0:0], c.periods[n:]...)
	}
}

// rotateHook, when set (by tests), is called after every rotation with
// each loop's position in the poller line.
var rotateHook func(arms []int)

// rotateIfDue ends the open period when it has its intervals and moves
// every loop to the other poller. The sampler's goroutine calls it right
// after a sample.
func (s *Sampler) rotateIfDue() {
	s.rotMu.Lock()
	defer s.rotMu.Unlock()
	s.mu.Lock()
	c := &s.cross
	if c.every == 0 || s.prev == nil {
		s.mu.Unlock()
		return
	}
	c.since++
	if c.since < c.every {
		s.mu.Unlock()
		return
	}
	c.closePeriods()
	c.since = 0
	c.phase ^= 1
	c.period++
	// Group.Switch cycles the list across the loops: loop i gets
	// order[i%2], the line's position (i + phase) % 2.
	order := []string{s.pollers[c.phase], s.pollers[1-c.phase]}
	arms := make([]int, len(c.open))
	for i := range arms {
		arms[i] = (i + c.phase) % 2
	}
	hook := rotateHook
	s.mu.Unlock()
	if _, err := s.group.Switch(order); err != nil {
		// A loop that could not move would serve one poller while the
		// schedule counts it on the other: stop the crossover (the
		// verdict falls back to the fixed split) and put the loops back
		// where the line places them.
		s.mu.Lock()
		s.cross.every = 0
		s.mu.Unlock()
		s.Mark("rotation failed, the crossover stops: " + err.Error())
		s.group.Switch(s.pollers)
	}
	if hook != nil {
		hook(arms)
	}
}

// loopCount is the number of loops sampled (none without a group, as in
// tests of the judge alone).
func (s *Sampler) loopCount() int {
	if s.group == nil {
		return 0
	}
	return len(s.group.Loops())
}

// Periods returns a copy of the crossover's closed periods, oldest first.
func (s *Sampler) Periods() []Period {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Period(nil), s.cross.periods...)
}
