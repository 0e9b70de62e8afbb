package stream

import (
	"sync/atomic"
	"time"
)

// Shutdown is when a process that was asked to stop closes its servers:
// set once, when a stop with a shutdown_delay begins, and read by any
// loop without a lock (Caddy's {http.shutting_down} and
// {http.time_until_shutdown}). The zero value is a process that is not
// stopping; a nil *Shutdown reads the same.
type Shutdown struct {
	at atomic.Pointer[time.Time]
}

// Schedule records that the servers close at t.
func (s *Shutdown) Schedule(t time.Time) { s.at.Store(&t) }

// At is when the servers close; ok is false while no stop is scheduled.
func (s *Shutdown) At() (t time.Time, ok bool) {
	if s == nil {
		return time.Time{}, false
	}
	p := s.at.Load()
	if p == nil {
		return time.Time{}, false
	}
	return *p, true
}
