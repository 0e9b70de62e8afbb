package ab

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// subBuckets is the number of buckets per power of two: a percentile read
// from the histogram is within 1/16 (6%) of the true value.
const subBuckets = 16

// numBuckets covers 0 to 2^27 µs (134 s); slower requests count in the last.
const numBuckets = 24 * subBuckets

// Histogram is one loop's latency histogram in microseconds, log-linear
// (16 buckets per power of two). Only its loop writes it, so Record is a
// plain load and store per bucket (no locked instruction); any goroutine
// may read it with Snapshot and merge snapshots off the loop.
type Histogram struct {
	counts [numBuckets]atomic.Uint64
}

// bucket returns the index of the bucket that holds v µs.
func bucket(v uint64) int {
	if v < subBuckets {
		return int(v)
	}
	shift := bits.Len64(v) - 5 // keep the top five bits: 1xxxx
	i := (shift+1)*subBuckets + int((v>>uint(shift))&(subBuckets-1))
	if i >= numBuckets {
		return numBuckets - 1
	}
	return i
}

// bucketBounds returns the values [lo, hi) bucket i holds, in µs.
func bucketBounds(i int) (lo, hi float64) {
	if i < subBuckets {
		return float64(i), float64(i + 1)
	}
	shift := i/subBuckets - 1
	sub := uint64(i % subBuckets)
	return float64((subBuckets + sub) << uint(shift)), float64((subBuckets + sub + 1) << uint(shift))
}

// Record counts one request of duration d. Call it only from the loop
// that owns the histogram.
func (h *Histogram) Record(d time.Duration) {
	us := d.Microseconds()
	if us < 0 {
		us = 0
	}
	c := &h.counts[bucket(uint64(us))]
	c.Store(c.Load() + 1) // one writer: no read-modify-write race
}

// Counts is a histogram's bucket counts at one moment.
type Counts [numBuckets]uint64

// Snapshot copies the counts. Safe from any goroutine; a request recorded
// meanwhile lands in this snapshot or the next.
func (h *Histogram) Snapshot() (c Counts) {
	for i := range h.counts {
		c[i] = h.counts[i].Load()
	}
	return c
}

// Sub returns the counts recorded between old and c.
func (c *Counts) Sub(old *Counts) (d Counts) {
	for i := range c {
		d[i] = c[i] - old[i]
	}
	return d
}

// Add adds o's counts into c (merging loops).
func (c *Counts) Add(o *Counts) {
	for i := range c {
		c[i] += o[i]
	}
}

// Total is the number of requests counted.
func (c *Counts) Total() (n uint64) {
	for _, v := range c {
		n += v
	}
	return n
}

// Quantile returns the q-quantile in µs, interpolated inside its bucket;
// NaN-free: 0 for an empty histogram.
func (c *Counts) Quantile(q float64) float64 {
	total := c.Total()
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var seen float64
	for i, v := range c {
		if v == 0 {
			continue
		}
		if seen+float64(v) >= rank {
			lo, hi := bucketBounds(i)
			return lo + (hi-lo)*(rank-seen)/float64(v)
		}
		seen += float64(v)
	}
	lo, _ := bucketBounds(numBuckets - 1)
	return lo
}

// Recorders holds one Histogram per loop, by loop index. The metrics
// observers of every site on a loop share that loop's histogram, and a
// reload's new observers find the same one.
type Recorders struct {
	mu     sync.Mutex
	byLoop map[int]*Histogram
}

// NewRecorders returns an empty set.
func NewRecorders() *Recorders { return &Recorders{byLoop: map[int]*Histogram{}} }

// For returns loop's histogram, making it on first use. It is called when
// a loop's handler is built, not per request.
func (r *Recorders) For(loop int) *Histogram {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.byLoop[loop]
	if h == nil {
		h = &Histogram{}
		r.byLoop[loop] = h
	}
	return h
}

// snapshot returns loop's counts (zero when it has recorded nothing).
func (r *Recorders) snapshot(loop int) Counts {
	r.mu.Lock()
	h := r.byLoop[loop]
	r.mu.Unlock()
	if h == nil {
		return Counts{}
	}
	return h.Snapshot()
}
