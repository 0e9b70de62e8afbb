//go:build unix

package netpoll

import "time"

// cpuReadEvery is how often a busy loop reads its thread's CPU clock: at
// most once per iteration and never more than 100 times a second, so the
// read (a system call on most kernels) costs nothing per request.
const cpuReadEvery = 10 * time.Millisecond

// maybeReadCPU runs on the loop after each wait, with l.clock just read.
func (l *Loop) maybeReadCPU() {
	if ThreadCPUSupported && l.clock.Sub(l.cpuAt) >= cpuReadEvery {
		l.cpuAt = l.clock
		l.cpu.Store(threadCPU())
	}
}

// CPU returns the CPU time the loop's thread had used when the loop last
// read it: at most cpuReadEvery of loop time ago while busy, or before it
// last went idle (RefreshCPU brings it up to date). Zero where
// ThreadCPUSupported is false. Safe from any goroutine.
func (l *Loop) CPU() time.Duration { return time.Duration(l.cpu.Load()) }

// RefreshCPU asks the loop to read its thread's CPU clock now, and then
// calls done on the loop (done must not block). A collector calls it on
// every loop before it reads CPU, so the CPU a loop used just before it
// went idle is not left out of an interval. Safe from any goroutine.
func (l *Loop) RefreshCPU(done func()) {
	l.Post(func() {
		if ThreadCPUSupported {
			l.cpuAt = l.now()
			l.cpu.Store(threadCPU())
		}
		if done != nil {
			done()
		}
	})
}
