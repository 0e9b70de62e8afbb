package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.25, 2}, {0.5, 3}, {0.75, 4}, {1, 5}, {0.1, 1.4}} {
		if got := Quantile(xs, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if xs[0] != 5 {
		t.Error("Quantile sorted its argument")
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) is not NaN")
	}
}

func TestRemoveOutliers(t *testing.T) {
	xs := []float64{10, 11, 12, 10, 11, 13, 12, 11, 500, math.NaN(), -400}
	kept, dropped := RemoveOutliers(xs, DefaultIQRFactor)
	if dropped != 3 || len(kept) != 8 {
		t.Fatalf("kept %v, dropped %d; want the 8 samples near 11, 3 dropped", kept, dropped)
	}
	for _, x := range kept {
		if x < 10 || x > 13 {
			t.Errorf("kept outlier %v", x)
		}
	}
	// Too few to have quartiles: only NaN goes.
	kept, dropped = RemoveOutliers([]float64{1, 1000, math.NaN()}, DefaultIQRFactor)
	if len(kept) != 2 || dropped != 1 {
		t.Errorf("small sample: kept %v, dropped %d", kept, dropped)
	}
}

func TestMannWhitneyKnownValue(t *testing.T) {
	// Worked by hand: a = 1..5, b = 6..10 gives U(b) = 25 (every pair),
	// mean 12.5, sd sqrt(5*5*11/12) = 4.787; z = (12.5-0.5)/4.787 = 2.507.
	a := []float64{1, 2, 3, 4, 5}
	b := []float64{6, 7, 8, 9, 10}
	r, err := MannWhitneyU(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if r.U != 25 || math.Abs(r.Z-2.5067) > 1e-3 || math.Abs(r.P-0.01219) > 1e-4 {
		t.Errorf("got %+v, want U=25 z=2.507 p=0.0122", r)
	}
	// Mirrored: b below a.
	r, _ = MannWhitneyU(b, a)
	if r.U != 0 || r.Z > -2.5 {
		t.Errorf("mirrored: %+v", r)
	}
}

func TestMannWhitneyTies(t *testing.T) {
	// Every value equal: no evidence, and no division by zero.
	r, err := MannWhitneyU([]float64{3, 3, 3}, []float64{3, 3, 3, 3})
	if err != nil || r.P != 1 || r.U != 6 {
		t.Errorf("all ties: %+v %v", r, err)
	}
	// Ties shrink the variance: the same ranks with ties give a larger |z|.
	noTies, _ := MannWhitneyU([]float64{1, 2, 3, 4}, []float64{5, 6, 7, 8})
	ties, _ := MannWhitneyU([]float64{1, 1, 1, 1}, []float64{2, 2, 2, 2})
	if !(math.Abs(ties.Z) > math.Abs(noTies.Z)) {
		t.Errorf("tie correction: |z| with ties %v not above %v without", ties.Z, noTies.Z)
	}
	if _, err := MannWhitneyU([]float64{1}, []float64{1, 2}); err != ErrTooFew {
		t.Errorf("one sample: err %v", err)
	}
}

func TestHodgesLehmannExact(t *testing.T) {
	a := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	b := make([]float64, len(a))
	for i, x := range a {
		b[i] = x + 3
	}
	s, err := HodgesLehmann(a, b, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	// n=m=10, level 0.95: k = floor(50 - 1.96*sqrt(175)) = 24, so the
	// interval is [d(25), d(76)] of the 100 differences b_j - a_i =
	// 3 + (j-i); d(25) = 0 and d(76) = 6: a shift of 3 on ten samples of
	// this spread is just not resolved.
	if s.Estimate != 3 || s.Lo != 0 || s.Hi != 6 || !s.SpansZero() {
		t.Errorf("shift of 3: %+v, want 3 in [0, 6]", s)
	}
	for i := range b {
		b[i]++
	}
	s, _ = HodgesLehmann(a, b, 0.95)
	if s.Estimate != 4 || s.Lo != 1 || s.Hi != 7 || s.SpansZero() {
		t.Errorf("shift of 4: %+v, want 4 in [1, 7]", s)
	}
}

// simulate draws n samples per group from a skewed distribution (the
// shape of CPU-per-request intervals: a floor plus a log-normal tail), b
// shifted by shift, and returns the 95% interval.
func simulate(rng *rand.Rand, n int, shift float64) Shift {
	draw := func(off float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = 40 + off + math.Exp(rng.NormFloat64()*0.5)*3
		}
		return xs
	}
	a, _ := RemoveOutliers(draw(0), DefaultIQRFactor)
	b, _ := RemoveOutliers(draw(shift), DefaultIQRFactor)
	s, err := HodgesLehmann(a, b, 0.95)
	if err != nil {
		panic(err)
	}
	return s
}

// TestCoverage is the instrument's calibration: with a known shift the
// 95% interval must cover it in at least 93 of 100 seeded simulations.
func TestCoverage(t *testing.T) {
	for _, c := range []struct {
		n     int
		shift float64
	}{{12, 1.5}, {30, 0.8}, {60, -2}} {
		rng := rand.New(rand.NewPCG(1, uint64(c.n)))
		covered := 0
		for i := 0; i < 100; i++ {
			s := simulate(rng, c.n, c.shift)
			if s.Lo <= c.shift && c.shift <= s.Hi {
				covered++
			}
		}
		t.Logf("n=%d shift=%v: covered %d/100", c.n, c.shift, covered)
		if covered < 93 {
			t.Errorf("n=%d shift=%v: the 95%% interval covered the true shift %d/100 times, want >= 93", c.n, c.shift, covered)
		}
	}
}

// TestAAFalsePositives: two groups drawn from the same distribution are
// called different (interval excludes zero, or p < 0.05) in about 5% of
// simulations, not more.
func TestAAFalsePositives(t *testing.T) {
	const sims = 1000
	rng := rand.New(rand.NewPCG(7, 13))
	flaggedCI, flaggedP := 0, 0
	for i := 0; i < sims; i++ {
		a := make([]float64, 20)
		b := make([]float64, 20)
		for j := range a {
			a[j] = 40 + math.Exp(rng.NormFloat64()*0.5)*3
			b[j] = 40 + math.Exp(rng.NormFloat64()*0.5)*3
		}
		a, _ = RemoveOutliers(a, DefaultIQRFactor)
		b, _ = RemoveOutliers(b, DefaultIQRFactor)
		if s, _ := HodgesLehmann(a, b, 0.95); !s.SpansZero() {
			flaggedCI++
		}
		if r, _ := MannWhitneyU(a, b); r.P < 0.05 {
			flaggedP++
		}
	}
	t.Logf("A/A: interval excluded zero %d/%d, p<0.05 %d/%d", flaggedCI, sims, flaggedP, sims)
	if flaggedCI > sims*7/100 || flaggedP > sims*7/100 {
		t.Errorf("A/A flagged a difference too often: interval %d/%d, test %d/%d (want about 5%%)", flaggedCI, sims, flaggedP, sims)
	}
}

// TestPowerDetects: a shift of a few standard errors is detected, with
// the right sign, nearly always.
func TestPowerDetects(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	hits := 0
	for i := 0; i < 100; i++ {
		if s := simulate(rng, 30, 2.5); !s.SpansZero() && s.Lo > 0 {
			hits++
		}
	}
	if hits < 95 {
		t.Errorf("shift 2.5 at n=30 detected with the right sign %d/100 times", hits)
	}
}

func TestIntervalsFor(t *testing.T) {
	// Half-width 1 at n=10: to resolve an effect of 1 at 80% power needs
	// ((1.96+0.84)/1.96)^2 = 2.04 times the samples.
	if got := IntervalsFor(1, 10, 1, 0.95, 0.8); got != 21 {
		t.Errorf("IntervalsFor(1, 10, 1) = %d, want 21", got)
	}
	// Half the effect, four times the samples.
	if got := IntervalsFor(1, 10, 0.5, 0.95, 0.8); got != 82 {
		t.Errorf("IntervalsFor(1, 10, 0.5) = %d, want 82", got)
	}
	if IntervalsFor(0, 10, 1, 0.95, 0.8) != 0 || IntervalsFor(1, 10, 0, 0.95, 0.8) != 0 {
		t.Error("no width or no effect should say nothing")
	}
	// The estimate holds: at the predicted n, an effect of that size is
	// detected in about 80% of simulations.
	rng := rand.New(rand.NewPCG(5, 5))
	s := simulate(rng, 40, 0)
	need := IntervalsFor(s.HalfWidth(), 40, 1.0, 0.95, 0.8)
	hits := 0
	for i := 0; i < 100; i++ {
		if r := simulate(rng, need, 1.0); r.Lo > 0 {
			hits++
		}
	}
	t.Logf("need %d per group; detected %d/100", need, hits)
	if hits < 60 || hits > 98 {
		t.Errorf("at the predicted %d samples the effect was detected %d/100 times, want about 80", need, hits)
	}
}

func TestNormalQuantile(t *testing.T) {
	if z := NormalQuantile(0.975); math.Abs(z-1.959964) > 1e-5 {
		t.Errorf("NormalQuantile(0.975) = %v", z)
	}
}
