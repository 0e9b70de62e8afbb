package netpoll

import (
	"container/heap"
	"time"
)

// Timer is a callback scheduled on a Loop. It is owned by the loop: create,
// stop and reset it only from the loop's goroutine.
type Timer struct {
	when  time.Time
	seq   uint64 // breaks ties so timers due at the same instant fire in order
	index int    // position in the heap, -1 when not scheduled
	f     func()
	loop  *Loop
}

// Stop cancels the timer in O(log n) and reports whether it was pending.
func (t *Timer) Stop() bool {
	if t == nil || t.index < 0 {
		return false
	}
	heap.Remove(&t.loop.timers, t.index)
	return true
}

// Reset reschedules the timer to fire after d, whether or not it was
// pending, and reports whether it was.
func (t *Timer) Reset(d time.Duration) bool {
	l := t.loop
	l.timerSeq++
	t.when, t.seq = l.now().Add(d), l.timerSeq
	if t.index >= 0 {
		heap.Fix(&l.timers, t.index)
		return true
	}
	heap.Push(&l.timers, t)
	return false
}

// timerHeap is a binary min-heap ordered by deadline, then by creation.
type timerHeap []*Timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].when.Equal(h[j].when) {
		return h[i].seq < h[j].seq
	}
	return h[i].when.Before(h[j].when)
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*Timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
