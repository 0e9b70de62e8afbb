package netpoll

import (
	"runtime"
	"time"
)

// yieldEvery is how long a loop goes between passes through the Go
// scheduler: under the 10 ms after which the runtime's monitor thread
// (sysmon) treats a goroutine as one that hogs its P.
//
// A loop's goroutine never blocks in the scheduler: it sleeps in the
// poller's wait, a system call, and wakes on its own thread, so to sysmon
// its P has run one goroutine since the scheduler last picked one (the P's
// schedtick has not moved), however often the loop waited in between.
// Once that has lasted 10 ms (forcePreemptNS in the runtime's proc.go),
// sysmon acts on each of its ticks:
//
//   - if the loop is running Go code, sysmon sends its thread a preemption
//     signal (tgkill, then rt_sigreturn), and the goroutine, locked to its
//     thread, goes round the scheduler through two other threads to come
//     back (futex wake-ups and sleeps on all three);
//   - if the loop is in its wait, sysmon takes the loop's P away. With
//     every P idle, sysmon then sleeps on a futex that the loop's next
//     return from the wait must wake, and starts ticking every 20 µs again
//     (nanosleep). The loop takes an idle P, whose schedtick has not moved
//     either, so the next tick takes that one too.
//
// That went on, tick after tick, until a signal found the loop running Go
// code. A loop that goes through the scheduler itself (runtime.Gosched:
// the same round through other threads, without the signal) before the
// 10 ms are up pays one round per yieldEvery while it is busy, and
// sysmon, with nothing to take, backs off to a tick every 10 ms. The
// counts before and after are in docs/performance.md ("The runtime stays
// out of the loop's way").
//
// 8 ms leaves 2 ms for the iteration in which the time runs out, far more
// than an iteration takes unless the machine is overloaded; then sysmon
// preempts the loop once, as it did every time before.
const yieldEvery = 8 * time.Millisecond

// maybeYield runs on the loop after each wait, with l.clock just read:
// right after the wait, so that a loop whose P sysmon took during a long
// wait goes through the scheduler before it runs any handler, ahead of
// sysmon's next tick.
func (l *Loop) maybeYield() {
	if l.clock.Sub(l.yieldedAt) < yieldEvery {
		return
	}
	runtime.Gosched()
	l.yieldedAt = l.clock
	l.yields.Add(1)
}
