package stats

import "math"

// A confidence sequence is a sequence of intervals, one after every new
// observation, that all cover the true mean at once with probability
// 1 - α. A fixed-sample interval read again after every new interval of
// data, and acted on at the first look that excludes zero, is wrong far
// more often than its stated 5%; a confidence sequence may be read after
// every observation and stopped on at any time.
//
// ConfSeq is the asymptotic confidence sequence of Waudby-Smith, Arbour,
// Sinha, Kennedy and Ramdas, "Time-uniform central limit theory and
// asymptotic confidence sequences" (arXiv:2103.06476, 2021, revised
// 2024), their Gaussian-mixture sequence: for observations X_1..X_t with
// mean μ,
//
//	μ̂_t ± σ̂_t · sqrt( 2(tρ²+1)/(t²ρ²) · log( sqrt(tρ²+1)/α ) )
//
// where μ̂_t and σ̂_t are the sample mean and standard deviation. It is
// Robbins' two-sided normal-mixture boundary (a N(0, ρ²) mixture of
// exp(λS_t − λ²t/2), whose crossing of 1/α Ville's inequality bounds by α)
// applied to the standardised sum, which the strong invariance principle
// makes valid as t grows for any distribution with a finite variance;
// the σ̂ in it is the sample's, so no variance need be known. ρ sets where
// the sequence is tightest: NewConfSeq picks it for a planned number of
// observations. "Asymptotic" means that with few observations of a
// skewed or heavy-tailed quantity the guarantee is approximate, so no
// verdict is given before MinObservations; the tests in confseq_test.go
// measure what that leaves on heavy-tailed, drifting data.
type ConfSeq struct {
	Level   float64 // 1 − α, e.g. 0.95
	Rho2    float64 // ρ², the mixture's variance
	Planned int     // the number of observations ρ was chosen for
}

// MinObservations is the fewest observations a ConfSeq gives a verdict
// from: below it the sample standard deviation is too unsure for the
// central-limit approximation the sequence rests on.
const MinObservations = 10

// NewConfSeq returns the confidence sequence at level (0.95) whose
// interval is narrowest after planned observations; it is valid at every
// other count too, a little wider away from the plan.
func NewConfSeq(level float64, planned int) ConfSeq {
	planned = max(planned, 1)
	c := ConfSeq{Level: level, Planned: planned}
	// The radius at the planned count is unimodal in log ρ²: a golden
	// section search finds the minimum (the paper gives it through the
	// Lambert W function; this needs none).
	f := func(lr float64) float64 { c.Rho2 = math.Exp(lr); return c.Radius(planned, 1) }
	lo, hi := math.Log(1e-6/float64(planned)), math.Log(1e3/float64(planned))
	const g = 0.6180339887498949
	a, b := hi-g*(hi-lo), lo+g*(hi-lo)
	fa, fb := f(a), f(b)
	for i := 0; i < 100; i++ {
		if fa < fb {
			hi, b, fb = b, a, fa
			a = hi - g*(hi-lo)
			fa = f(a)
		} else {
			lo, a, fa = a, b, fb
			b = lo + g*(hi-lo)
			fb = f(b)
		}
	}
	c.Rho2 = math.Exp((lo + hi) / 2)
	return c
}

// Radius is the sequence's half-width after n observations whose
// standard deviation is sd.
func (c ConfSeq) Radius(n int, sd float64) float64 {
	if n <= 0 {
		return math.Inf(1)
	}
	t, r2 := float64(n), c.Rho2
	alpha := 1 - c.Level
	return sd * math.Sqrt(2*(t*r2+1)/(t*t*r2)*math.Log(math.Sqrt(t*r2+1)/alpha))
}

// Estimate is the sequence's interval for the mean after N observations.
type Estimate struct {
	Mean   float64 // the sample mean
	SD     float64 // the sample standard deviation
	Lo, Hi float64 // the interval, Mean ± Radius
	N      int     // observations
	Ready  bool    // N >= MinObservations: the interval may be acted on
}

// SpansZero reports whether the interval contains zero: no detectable
// difference (an Estimate that is not Ready spans zero by decree).
func (e Estimate) SpansZero() bool { return !e.Ready || (e.Lo <= 0 && e.Hi >= 0) }

// HalfWidth is half the interval's width, the resolution the
// observations give.
func (e Estimate) HalfWidth() float64 { return (e.Hi - e.Lo) / 2 }

// Interval returns the sequence's interval for the mean of xs, the
// observations so far in the order they came. NaNs are skipped.
func (c ConfSeq) Interval(xs []float64) Estimate {
	var n int
	var mean, m2 float64
	for _, x := range xs {
		if math.IsNaN(x) {
			continue
		}
		// Welford's update: stable for values far from zero.
		n++
		d := x - mean
		mean += d / float64(n)
		m2 += d * (x - mean)
	}
	e := Estimate{N: n, Mean: mean, Lo: math.Inf(-1), Hi: math.Inf(1)}
	if n < 2 {
		if n == 0 {
			e.Mean = math.NaN()
		}
		return e
	}
	e.SD = math.Sqrt(m2 / float64(n-1))
	r := c.Radius(n, e.SD)
	e.Lo, e.Hi = mean-r, mean+r
	e.Ready = n >= MinObservations
	return e
}

// NeededFor is the number of observations after which the interval's
// half-width falls below effect, if their standard deviation stays sd:
// how long until a difference of that size would be told from none. It
// returns 0 when there is nothing to say (no spread or no effect) and
// math.MaxInt when no count up to a billion reaches it.
func (c ConfSeq) NeededFor(effect, sd float64) int {
	effect = math.Abs(effect)
	if effect == 0 || sd <= 0 || math.IsNaN(sd) || math.IsNaN(effect) {
		return 0
	}
	// The radius falls with n for n beyond a handful: find a bracket by
	// doubling, then bisect.
	lo, hi := 1, 1
	for c.Radius(hi, sd) >= effect {
		lo = hi
		hi *= 2
		if hi > 1e9 {
			return math.MaxInt
		}
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if c.Radius(mid, sd) < effect {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return max(lo, MinObservations)
}

// LogContrast compares the middle of three consecutive periods with the
// mean of its neighbours on the log scale: ln mid − (ln prev + ln next)/2.
// When the middle period ran one poller and its neighbours the other, it
// estimates the log of their ratio, and a load that drifts linearly (in
// proportion) across the three periods cancels: the neighbours' mean sits
// where the middle is. ok is false unless all three are positive.
func LogContrast(prev, mid, next float64) (d float64, ok bool) {
	if !(prev > 0 && mid > 0 && next > 0) || math.IsInf(prev+mid+next, 0) {
		return 0, false
	}
	return math.Log(mid) - (math.Log(prev)+math.Log(next))/2, true
}
