package redisstore

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Reachability states of stats.state.
const (
	stateUnknown int32 = iota
	stateUp
	stateDown
)

// stats are what the storage reports about Redis: its reachability, the
// commands that failed and the lock renewals that did not happen.
type stats struct {
	state    atomic.Int32
	up       prometheus.Gauge
	errors   *prometheus.CounterVec
	renewals *prometheus.CounterVec
}

func newStats() *stats {
	return &stats{
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pollproxy_storage_up",
			Help: "1 when the shared certificate storage (Redis) answered the last command, 0 when it did not.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pollproxy_storage_errors_total",
			Help: "Certificate storage commands that failed because Redis could not be reached or refused them, by operation.",
		}, []string{"op"}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pollproxy_storage_lock_renewal_failures_total",
			Help: "Certificate storage lock leases that could not be renewed: unreachable (Redis did not answer) or lost (another owner holds the lock).",
		}, []string{"reason"}),
	}
}

// markUp records a successful command; it reports whether Redis was down
// before, so the recovery is logged once.
func (st *stats) markUp() bool {
	old := st.state.Swap(stateUp)
	if old != stateUp {
		st.up.Set(1)
	}
	return old == stateDown
}

// markDown records a failed command; it reports whether this is the
// first failure since Redis last answered, so the outage is logged once.
func (st *stats) markDown() bool {
	old := st.state.Swap(stateDown)
	if old != stateDown {
		st.up.Set(0)
	}
	return old != stateDown
}

// Collector returns the storage's metrics for a Prometheus registry:
// pollproxy_storage_up, pollproxy_storage_errors_total{op} and
// pollproxy_storage_lock_renewal_failures_total{reason}.
func (s *Storage) Collector() prometheus.Collector { return collector{s.stats} }

type collector struct{ st *stats }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	c.st.up.Describe(ch)
	c.st.errors.Describe(ch)
	c.st.renewals.Describe(ch)
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.st.up.Collect(ch)
	c.st.errors.Collect(ch)
	c.st.renewals.Collect(ch)
}

// Up reports whether Redis answered the storage's last command.
func (s *Storage) Up() bool { return s.stats.state.Load() == stateUp }

// Down reports whether Redis failed the storage's last command. Before
// the first command both Up and Down are false.
func (s *Storage) Down() bool { return s.stats.state.Load() == stateDown }
