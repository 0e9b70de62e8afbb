//go:build linux || darwin || freebsd || openbsd || dragonfly

package netpoll

import "golang.org/x/sys/unix"

// ThreadCPUSupported reports whether loops measure their thread's CPU
// time on this OS: clock_gettime(CLOCK_THREAD_CPUTIME_ID), which Linux,
// macOS (10.12 on), FreeBSD, OpenBSD and DragonFly all have.
const ThreadCPUSupported = true

// threadCPU returns the CPU time (user and system) the calling OS thread
// has used, in nanoseconds. A loop runs locked to its thread, so on the
// loop this is the loop's own CPU.
func threadCPU() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return ts.Nano()
}
