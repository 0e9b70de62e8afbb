package ab

import (
	"syscall"
	"time"
)

// Process is the whole process's figures over one interval: what a
// comparison of two instances (Compare, `pollproxy ab --compare`) judges.
// A loop's thread clock misses the TLS handshake pool, the Go runtime's
// own threads and memory; a canary running another backend may pay
// there, so these are the process's.
type Process struct {
	Interval int       `json:"interval"`
	End      time.Time `json:"end"`
	Seconds  float64   `json:"seconds"`
	Requests uint64    `json:"requests"` // served by every loop, whatever its poller
	// CPUPerRequest is the process's user and system CPU µs per request.
	CPUPerRequest float64 `json:"process_cpu_us_per_request"`
	P99           float64 `json:"p99_us"` // over every loop's requests
	// RSS is the resident set at the interval's end in bytes (0 where the
	// OS does not say; see residentBytes).
	RSS int64 `json:"rss_bytes"`
}

// processCPU is the process's user plus system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processSample turns an interval's whole-process counts into a Process.
func processSample(cpu time.Duration, hist *Counts) Process {
	p := Process{Requests: hist.Total(), RSS: residentBytes()}
	if r := float64(p.Requests); r > 0 {
		p.CPUPerRequest = float64(cpu.Microseconds()) / r
		p.P99 = hist.Quantile(0.99)
	}
	return p
}
