package h2

import "time"

// initialWindow is the window every stream and the connection start with
// before SETTINGS change it (RFC 9113 §6.9.2).
const initialWindow = 65535

// inflow is a receive window: how many bytes the peer may still send (avail)
// and how many it has been allowed back but not yet told about (unsent).
type inflow struct {
	avail  int32
	unsent int32
}

func (f *inflow) init(n int32) { f.avail, f.unsent = n, 0 }

// take charges n received bytes; it reports false when they exceed the
// window (a FLOW_CONTROL_ERROR).
func (f *inflow) take(n uint32) bool {
	if n > uint32(f.avail) {
		return false
	}
	f.avail -= int32(n)
	return true
}

// grow widens the window by n bytes the peer is told about separately (a
// WINDOW_UPDATE or a new SETTINGS_INITIAL_WINDOW_SIZE of autotuning).
func (f *inflow) grow(n int32) {
	f.avail += min(n, maxWindow-f.avail-f.unsent)
}

// add returns n consumed bytes to the window and reports the WINDOW_UPDATE
// increment to send now, or 0 to keep batching small updates.
func (f *inflow) add(n int) int32 {
	if n <= 0 {
		return 0
	}
	f.hold(n)
	return f.release()
}

// hold returns n consumed bytes to the window without deciding on a
// WINDOW_UPDATE yet; release decides.
func (f *inflow) hold(n int) {
	if n > maxWindow-int(f.avail)-int(f.unsent) {
		// Cannot happen for a well-behaved caller; never overflow.
		n = maxWindow - int(f.avail) - int(f.unsent)
	}
	f.unsent += int32(max(n, 0))
}

// maxUpdateBatch is the most consumed bytes release holds back: 1 MiB.
const maxUpdateBatch = 1 << 20

// release reports the WINDOW_UPDATE increment to send now for the bytes
// returned so far, or 0 to keep batching them.
//
// An update goes out once the bytes to return reach a quarter of the
// window (avail+unsent, what the peer could send if told now) or
// maxUpdateBatch, the smaller: the peer still holds three quarters of it,
// so it never waits for credit while the window is at least 4/3 of the
// path's bandwidth-delay product, and a peer that has run dry is answered
// at once. Returning credit per DATA frame (the rule was "4 KiB or more")
// made an upload send thousands of WINDOW_UPDATE records, each a TLS
// record, a system call here and a wake-up and a read at the client. But a
// quarter of a grown window (8 MiB of 32) is credit the path then lacks
// when it carries more than the 24 MiB that leaves, so batches stop at 1
// MiB (docs/performance.md has the upload speeds of both). At most 1 MiB,
// a 100 MiB upload costs some 200 updates (connection and stream), and the
// default windows (1 and 2 MiB) still batch a quarter.
func (f *inflow) release() int32 {
	if f.unsent == 0 || 3*int64(f.unsent) < int64(f.avail) && f.unsent < maxUpdateBatch {
		return 0
	}
	inc := f.unsent
	f.avail += inc
	f.unsent = 0
	return inc
}

// rateCounter counts events within a fixed window.
type rateCounter struct {
	n     int
	start time.Time
}

// add counts k events at now and returns the count within the current window.
func (r *rateCounter) add(now time.Time, window time.Duration, k int) int {
	if r.start.IsZero() || now.Sub(r.start) >= window {
		r.start = now
		r.n = 0
	}
	r.n += k
	return r.n
}
