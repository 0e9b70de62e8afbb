package upstream

import "time"

// Health configures passive health checking as Caddy's reverse_proxy
// does: a failure is remembered for FailDuration, and an upstream with
// MaxFails failures remembered is skipped by the balancer until enough of
// them are forgotten. FailDuration 0 (the default) or MaxFails < 0 turns
// passive checks off. A response whose status is in UnhealthyStatus, or
// whose head took longer than UnhealthyLatency, counts as a failure.
type Health struct {
	MaxFails         int
	FailDuration     time.Duration
	UnhealthyStatus  []int
	UnhealthyLatency time.Duration
}

func (h *Health) on() bool { return h.FailDuration > 0 && h.MaxFails >= 0 }

// Healthy reports whether a loop's balancer may pick u: neither passive
// checks (failures remembered) nor active ones (activehealth.go) hold it
// down. It reads only atomics, so every loop may ask at once. The loop's
// time it is given is not used today: failures are forgotten on runtime
// timers (Failed), not by comparing times.
func (u *Upstream) Healthy(time.Time) bool {
	m := u.maxFails.Load()
	return (m <= 0 || u.fails.Load() < m) && !u.activeDown.Load()
}

// Failed counts a failure of a request to u (a refused connect, a timeout,
// a broken or unhealthy response) and, with passive checks on, remembers
// it for h.FailDuration. A loop calls it, with its time (not used today);
// the forgetting runs on a runtime timer, off the loops, and only
// decrements an atomic.
func (u *Upstream) Failed(h Health, _ time.Time) {
	u.Failures.Add(1)
	if !h.on() {
		return
	}
	u.maxFails.Store(int32(max(h.MaxFails, 1)))
	u.fails.Add(1)
	time.AfterFunc(h.FailDuration, func() { u.fails.Add(-1) })
}

// UnhealthyResponse reports whether a response head with status, which
// took latency to arrive, counts as a failure (unhealthy_status,
// unhealthy_latency).
func (h *Health) UnhealthyResponse(status int, latency time.Duration) bool {
	if !h.on() {
		return false
	}
	if h.UnhealthyLatency > 0 && latency > h.UnhealthyLatency {
		return true
	}
	for _, s := range h.UnhealthyStatus {
		if statusIs(s, status) {
			return true
		}
	}
	return false
}
