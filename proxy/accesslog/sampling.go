package accesslog

import (
	"sync/atomic"
	"time"
)

// Sampling is Caddy's log sampling (zap's sampler, which Caddy's
// sampling option configures): within each Interval, the first First
// entries of a level are written, then every Thereafter-th one, and the
// rest are dropped. Counting starts over with the first entry after an
// interval ended. A Sampling is shared by every logger of one log
// configuration (the site logs that take the default logger's share its
// count, as they share its core in Caddy); its counters are atomic, since
// loggers run on every loop.
type Sampling struct {
	Interval          time.Duration
	First, Thereafter int
	counts            [2]sampleCount // Info, Error: the levels access entries have
}

// Caddy's defaults for what is zero.
const (
	DefaultSamplingInterval   = time.Second
	DefaultSamplingFirst      = 100
	DefaultSamplingThereafter = 100
)

// NewSampling returns a sampling with Caddy's defaults for the zero
// values.
func NewSampling(interval time.Duration, first, thereafter int) *Sampling {
	if interval == 0 {
		interval = DefaultSamplingInterval
	}
	if first == 0 {
		first = DefaultSamplingFirst
	}
	if thereafter == 0 {
		thereafter = DefaultSamplingThereafter
	}
	return &Sampling{Interval: interval, First: first, Thereafter: thereafter}
}

type sampleCount struct {
	resetAt atomic.Int64 // unix ns at which the count starts over
	n       atomic.Uint64
}

// keep counts an entry of level lv written at t and reports whether it
// is written.
func (s *Sampling) keep(lv Level, t time.Time) bool {
	c := &s.counts[0]
	if lv >= Error {
		c = &s.counts[1]
	}
	n := c.inc(t.UnixNano(), s.Interval)
	first := uint64(s.First)
	return n <= first || s.Thereafter > 0 && (n-first)%uint64(s.Thereafter) == 0
}

// inc is zap's counter: one more in the current interval, or the first
// of a new one.
func (c *sampleCount) inc(now int64, interval time.Duration) uint64 {
	at := c.resetAt.Load()
	if at > now {
		return c.n.Add(1)
	}
	c.n.Store(1)
	if !c.resetAt.CompareAndSwap(at, now+int64(interval)) {
		// Another loop started the interval (and stored 1) meanwhile.
		return c.n.Add(1)
	}
	return 1
}
