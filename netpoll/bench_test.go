//go:build unix

package netpoll

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is the process's user and system time so far.
func processCPU() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWait measures one wait with N idle descriptors registered and
// one active: the poll-versus-epoll curve. Each iteration makes the active
// descriptor readable, waits, and drains it.
func BenchmarkWait(b *testing.B) {
	for _, name := range Available() {
		for _, idle := range []int{10, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/idle=%d", name, idle), func(b *testing.B) {
				p := openPoller(b, name)
				for i := 0; i < idle/2; i++ { // both ends idle: two per pair
					x, y := socketPair(b)
					p.Add(x, Read, Token(2*i+2))
					p.Add(y, Read, Token(2*i+3))
				}
				active, peer := socketPair(b)
				if err := p.Add(active, Read, 1); err != nil {
					b.Fatal(err)
				}
				evs := make([]Ready, 64)
				one, buf := []byte{1}, make([]byte, 16)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					unix.Write(peer, one)
					n, err := p.Wait(evs, -1)
					if err != nil || n != 1 || evs[0].Token != 1 {
						b.Fatalf("wait = %d %v %v", n, evs[:n], err)
					}
					unix.Read(active, buf)
				}
			})
		}
	}
}

// BenchmarkTimerRequests is the timers' part of proxying at h2 -c 6 -m 20:
// 256 owners (exchanges, origin connections) with a timer each, and per
// iteration one request ending (Stop of one owner's timer) and one
// starting (Reset of another's, with the same timeout as always). The
// owner holds its Timer by pointer (NewTimer) or by value (InitTimer).
// A microsecond passes between requests.
func BenchmarkTimerRequests(b *testing.B) {
	b.Run("pointer", func(b *testing.B) { benchTimerRequests(b, false) })
	b.Run("value", func(b *testing.B) { benchTimerRequests(b, true) })
}

func benchTimerRequests(b *testing.B, byValue bool) {
	l, err := NewLoop(0, "auto")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	type owner struct {
		tv Timer
		tp *Timer
		_  [448]byte // the rest of an exchange: only its size matters
	}
	const n = 256
	timers := make([]*Timer, n)
	for i := range timers {
		o := new(owner)
		if byValue {
			l.InitTimer(&o.tv, func() {})
			o.tp = &o.tv
		} else {
			o.tp = l.NewTimer(func() {})
		}
		timers[i] = o.tp
		timers[i].Reset(time.Minute)
	}
	b.ResetTimer()
	for i := range b.N {
		l.clock = l.clock.Add(time.Microsecond) // deadlines move on, as in a running loop
		timers[i%n].Stop()
		timers[(i+n/2)%n].Reset(time.Minute)
	}
}

// BenchmarkPostToSleepingLoop is what handing an accepted connection to
// another loop costs (proxy/server's accept balance): a task queued on a
// loop asleep in its poller, the wake-up (an eventfd or pipe write), and
// the loop waking to run it. Each iteration waits for the task to run, so
// the time per operation is the hand-off's latency, which on a busy
// machine is mostly the scheduler's; cpu-ns/op is the CPU both sides
// spent (the process's user and system time over the run), the cost.
func BenchmarkPostToSleepingLoop(b *testing.B) {
	for _, name := range Available() {
		b.Run(name, func(b *testing.B) {
			l, err := NewLoop(0, name)
			if err != nil {
				b.Fatal(err)
			}
			go l.Run()
			defer func() { l.Stop(); <-l.Done(); l.Close() }()
			ran := make(chan struct{})
			task := func() { ran <- struct{}{} }
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			for i := 0; i < b.N; i++ {
				l.Post(task)
				<-ran
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
