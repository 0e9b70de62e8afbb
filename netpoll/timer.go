package netpoll

import "time"

// Timer is a callback scheduled on a Loop. It is owned by the loop: create,
// stop and reset it only from the loop's goroutine.
//
// A request arms its timer when it starts and stops it when it ends, with
// the same timeout each time, so the deadline only ever moves later, and a
// heap operation per Reset and per Stop, each comparison loading two cold
// Timers, showed in profiles under load (docs/performance.md). So both are
// lazy: Stop only marks the timer, and Reset to a deadline no earlier than
// the one its heap entry holds only records it. The entry surfaces at its
// old deadline and is then dropped (stopped) or moved to the new one. Only
// a Reset to an earlier deadline, or of a timer without an entry, touches
// the heap.
type Timer struct {
	loop    *Loop
	pending bool
	index   int    // position of its heap entry, -1 when it has none
	at      int64  // its heap entry's deadline, so Reset need not load the entry
	when    int64  // deadline while pending, ns since the loop's epoch
	seq     uint64 // breaks ties so timers due at the same instant fire in order
	f       func()
	owner   Owner // abandoned when f panics (contain.go); nil: none
}

// SetOwner names the connection the timer's function works for: a panic
// in it abandons o. Call it from the loop; InitTimer clears it.
func (t *Timer) SetOwner(o Owner) { t.owner = o }

// Initialized reports whether the timer belongs to a loop (NewTimer or
// InitTimer made it).
func (t *Timer) Initialized() bool { return t.loop != nil }

// Stop cancels the timer and reports whether it was pending. Its heap
// entry, and so a reference to t, may stay until the old deadline passes
// or the heap is compacted.
func (t *Timer) Stop() bool {
	if t == nil || !t.pending {
		return false
	}
	t.pending = false
	l := t.loop
	l.npending--
	l.timers.compact(l.npending)
	return true
}

// Reset reschedules the timer to fire after d, whether or not it was
// pending, and reports whether it was.
func (t *Timer) Reset(d time.Duration) bool {
	l := t.loop
	l.timerSeq++
	t.when, t.seq = l.nowNs()+int64(d), l.timerSeq
	was := t.pending
	if !was {
		t.pending = true
		l.npending++
	}
	h := &l.timers
	switch {
	case t.index < 0:
		h.push(timerEntry{t.when, t.seq, t})
	case t.when < t.at:
		// Earlier than its entry: the entry must move up to it.
		h.s[t.index].when, h.s[t.index].seq, t.at = t.when, t.seq, t.when
		h.up(t.index)
	}
	return was
}

// timerEntry is a timer's place in the heap. Its key is a copy of the
// timer's deadline when it was placed, so comparisons read only the heap's
// own array; it is never later than the timer's deadline while the timer
// is pending.
type timerEntry struct {
	when int64
	seq  uint64
	t    *Timer
}

func (e *timerEntry) before(o *timerEntry) bool {
	return e.when < o.when || e.when == o.when && e.seq < o.seq
}

// timerHeap is a binary min-heap of entries ordered by key. It holds at
// most one entry per Timer, and compact keeps the stopped timers' entries
// (which wait for their old deadline) fewer than the pending ones plus a
// constant, so memory stays bounded by what is pending.
type timerHeap struct {
	s []timerEntry
}

func (h *timerHeap) push(e timerEntry) {
	e.t.index, e.t.at = len(h.s), e.when
	h.s = append(h.s, e)
	h.up(len(h.s) - 1)
}

// popMin removes the first entry; the caller has read it.
func (h *timerHeap) popMin() {
	n := len(h.s) - 1
	h.s[0].t.index = -1
	if n > 0 {
		h.s[0] = h.s[n]
		h.s[0].t.index = 0
	}
	h.s[n] = timerEntry{}
	h.s = h.s[:n]
	if n > 0 {
		h.down(0)
	}
}

func (h *timerHeap) up(i int) {
	s := h.s
	e := s[i]
	for i > 0 {
		p := (i - 1) / 2
		if !e.before(&s[p]) {
			break
		}
		s[i] = s[p]
		s[i].t.index = i
		i = p
	}
	s[i] = e
	e.t.index = i
}

func (h *timerHeap) down(i int) {
	s := h.s
	n := len(s)
	e := s[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && s[r].before(&s[c]) {
			c = r
		}
		if !s[c].before(&e) {
			break
		}
		s[i] = s[c]
		s[i].t.index = i
		i = c
	}
	s[i] = e
	e.t.index = i
}

// compactSlack is how many stopped timers' entries may wait in the heap
// beyond the number of pending timers before compact drops them all.
const compactSlack = 64

// compact drops the entries of stopped timers once they outnumber the
// pending timers by compactSlack, and rebuilds the heap: O(n) after at
// least n/2 Stops, and it lets the stopped timers' owners be collected.
func (h *timerHeap) compact(pending int) {
	if len(h.s)-pending <= pending+compactSlack {
		return
	}
	kept := h.s[:0]
	for _, e := range h.s {
		if e.t.pending {
			kept = append(kept, e)
		} else {
			e.t.index = -1
		}
	}
	clear(h.s[len(kept):])
	h.s = kept
	for i := range kept {
		kept[i].t.index = i
	}
	for i := len(kept)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// expire runs the callbacks of the timers due at now, in order of deadline
// and then of Reset. An entry that surfaces for a stopped timer is dropped,
// and one whose timer was reset to later moves to that deadline.
func (h *timerHeap) expire(l *Loop, now int64) {
	for len(h.s) > 0 && h.s[0].when <= now {
		t := h.s[0].t
		switch {
		case !t.pending:
			h.popMin()
		case t.when != h.s[0].when || t.seq != h.s[0].seq:
			h.s[0].when, h.s[0].seq, t.at = t.when, t.seq, t.when
			h.down(0)
		default:
			h.popMin()
			t.pending = false
			l.npending--
			l.fire(t)
		}
	}
}

// next returns the earliest entry's key, which may be a stopped or
// moved timer's (the loop then wakes for nothing once), and false when
// the heap is empty.
func (h *timerHeap) next() (int64, bool) {
	if len(h.s) == 0 {
		return 0, false
	}
	return h.s[0].when, true
}
