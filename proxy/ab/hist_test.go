package ab

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

func TestBucketBounds(t *testing.T) {
	for _, v := range []uint64{0, 1, 15, 16, 17, 31, 32, 33, 100, 1000, 12345, 1 << 20, 99999999} {
		i := bucket(v)
		lo, hi := bucketBounds(i)
		if float64(v) < lo || float64(v) >= hi {
			t.Errorf("value %d in bucket %d = [%v, %v)", v, i, lo, hi)
		}
		if v >= 16 && (hi-lo)/lo > 1.0/16+1e-9 {
			t.Errorf("bucket %d [%v, %v) wider than 1/16", i, lo, hi)
		}
	}
	if bucket(math.MaxUint64) != numBuckets-1 {
		t.Error("huge value not in the last bucket")
	}
}

// TestHistogramQuantiles: percentiles read from the merged histograms of
// two loops are within the buckets' 1/16 of the exact ones.
func TestHistogramQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h1, h2 Histogram
	var all []float64
	for i := 0; i < 20000; i++ {
		us := 50 + math.Exp(rng.NormFloat64())*200
		all = append(all, math.Floor(us))
		d := time.Duration(us * float64(time.Microsecond))
		if i%3 == 0 {
			h1.Record(d)
		} else {
			h2.Record(d)
		}
	}
	sort.Float64s(all)
	c := h1.Snapshot()
	c2 := h2.Snapshot()
	c.Add(&c2)
	if c.Total() != 20000 {
		t.Fatalf("total %d", c.Total())
	}
	for _, q := range []float64{0.5, 0.9, 0.99} {
		exact := all[int(q*float64(len(all)))]
		got := c.Quantile(q)
		if math.Abs(got-exact)/exact > 1.0/16 {
			t.Errorf("q%v: histogram %v, exact %v", q, got, exact)
		}
	}
	// Sub gives what was recorded between two snapshots.
	before := h1.Snapshot()
	h1.Record(3 * time.Millisecond)
	after := h1.Snapshot()
	d := after.Sub(&before)
	if d.Total() != 1 || d.Quantile(0.5) < 2800 || d.Quantile(0.5) > 3200 {
		t.Errorf("delta: total %d, median %v", d.Total(), d.Quantile(0.5))
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	var h Histogram
	if n := testing.AllocsPerRun(100, func() { h.Record(time.Millisecond) }); n != 0 {
		t.Errorf("Record allocates %v times", n)
	}
}
