//go:build unix

package netpoll

import (
	"math/rand"
	"slices"
	"testing"
	"time"
)

// TestTimersAgainstModel drives one loop's timers by hand (the loop is not
// running; the test sets its clock) through random Resets, Stops and
// advances of the clock, and compares what fires, and in which order, with
// a plain model: every pending timer whose deadline has passed fires, by
// deadline and then by the order of the Resets. Deadlines are drawn from a
// small range so that many coincide, and timers are reset both earlier and
// later than their heap entries. The heap must also stay within its bound.
func TestTimersAgainstModel(t *testing.T) {
	l := newTestLoop(t, "auto")
	rng := rand.New(rand.NewSource(1))
	type model struct {
		pending bool
		when    int64
		seq     int
	}
	const n = 300
	timers := make([]*Timer, n)
	models := make([]model, n)
	var fired []int
	for i := range timers {
		timers[i] = l.NewTimer(func() { fired = append(fired, i) })
	}
	seq := 0
	now := int64(0)
	for step := 0; step < 20000; step++ {
		i := rng.Intn(n)
		switch r := rng.Intn(10); {
		case r < 5:
			d := int64(rng.Intn(40)) * int64(time.Millisecond)
			seq++
			was := timers[i].Reset(time.Duration(d))
			if was != models[i].pending {
				t.Fatalf("step %d: Reset reported pending %v, want %v", step, was, models[i].pending)
			}
			models[i] = model{true, now + d, seq}
		case r < 8:
			if got := timers[i].Stop(); got != models[i].pending {
				t.Fatalf("step %d: Stop reported %v, want %v", step, got, models[i].pending)
			}
			models[i].pending = false
		default:
			now += int64(rng.Intn(10)) * int64(time.Millisecond)
			l.clock = l.epoch.Add(time.Duration(now))
			var want []int
			for k, m := range models {
				if m.pending && m.when <= now {
					want = append(want, k)
					models[k].pending = false
				}
			}
			slices.SortFunc(want, func(a, b int) int {
				if models[a].when != models[b].when {
					return int(models[a].when - models[b].when)
				}
				return models[a].seq - models[b].seq
			})
			fired = fired[:0]
			l.timers.expire(l, now)
			if !slices.Equal(fired, want) {
				t.Fatalf("step %d: fired %v, want %v", step, fired, want)
			}
		}
		pending := 0
		for _, m := range models {
			if m.pending {
				pending++
			}
		}
		if l.npending != pending {
			t.Fatalf("step %d: %d pending, want %d", step, l.npending, pending)
		}
		if len(l.timers.s) > 2*pending+compactSlack+1 {
			t.Fatalf("step %d: heap holds %d entries for %d pending timers", step, len(l.timers.s), pending)
		}
	}
}

// A timer stopped and reset to later keeps its old heap entry; it must
// fire at the new deadline, not the old one, and after a timer due between
// the two.
func TestTimerStoppedThenResetLater(t *testing.T) {
	l := newTestLoop(t, "auto")
	runLoop(t, l)
	fired := make(chan string, 2)
	var start time.Time
	onLoop(l, func() {
		start = l.Now()
		late := l.AfterFunc(10*time.Millisecond, func() { fired <- "late" })
		late.Stop()
		late.Reset(80 * time.Millisecond)
		l.AfterFunc(40*time.Millisecond, func() { fired <- "middle" })
	})
	if a, b := <-fired, <-fired; a != "middle" || b != "late" {
		t.Fatalf("fired %s then %s", a, b)
	}
	if d := time.Since(start); d < 80*time.Millisecond {
		t.Fatalf("the reset timer fired after %v, before its 80ms", d)
	}
}

// Stopped timers' entries wait in the heap for their old deadlines, but no
// more of them than the pending timers plus compactSlack: a loop that arms
// and stops thousands of long timeouts holds memory for what is pending.
func TestStoppedTimersDoNotAccumulate(t *testing.T) {
	l := newTestLoop(t, "auto")
	timers := make([]*Timer, 5000)
	for i := range timers {
		timers[i] = l.NewTimer(func() { t.Error("a stopped timer fired") })
		timers[i].Reset(time.Hour)
	}
	for _, tm := range timers[10:] {
		tm.Stop()
	}
	if got, max := len(l.timers.s), 2*10+compactSlack+1; got > max {
		t.Fatalf("heap holds %d entries for 10 pending timers, want at most %d", got, max)
	}
	for _, tm := range timers[:10] {
		tm.Stop()
	}
	l.timers.expire(l, int64(2*time.Hour))
	if len(l.timers.s) != 0 || l.npending != 0 {
		t.Fatalf("after the deadlines: %d entries, %d pending", len(l.timers.s), l.npending)
	}
}
