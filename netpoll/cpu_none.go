//go:build unix && !(linux || darwin || freebsd || openbsd || dragonfly)

package netpoll

// ThreadCPUSupported reports whether loops measure their thread's CPU
// time on this OS. NetBSD, Solaris and AIX have no per-thread CPU clock
// that x/sys exposes, so there loops report none and the A/B verdict has
// no CPU per request (latency and poller counters remain).
const ThreadCPUSupported = false

func threadCPU() int64 { return 0 }
