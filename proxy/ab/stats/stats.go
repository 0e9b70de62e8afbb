package stats

import (
	"errors"
	"math"
	"sort"
)

// DefaultIQRFactor is how many interquartile ranges beyond the quartiles a
// sample must lie to be dropped as an outlier: Kayenta's default, wide
// enough that only intervals disturbed by something else (a deploy, a GC
// storm, a noisy neighbour) go.
const DefaultIQRFactor = 3.0

// MinSamples is the number of samples per group from which the normal
// approximation of U is trusted.
const MinSamples = 8

// ErrTooFew is returned when a group has fewer than two samples.
var ErrTooFew = errors.New("stats: too few samples")

// Quantile returns the q-quantile (0 <= q <= 1) of xs by linear
// interpolation between order statistics (R's type 7). It returns NaN for
// an empty slice.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := sorted(xs)
	return quantileSorted(s, q)
}

func quantileSorted(s []float64, q float64) float64 {
	if q <= 0 {
		return s[0]
	}
	if q >= 1 {
		return s[len(s)-1]
	}
	h := q * float64(len(s)-1)
	i := int(h)
	if i+1 >= len(s) {
		return s[i]
	}
	return s[i] + (h-float64(i))*(s[i+1]-s[i])
}

// Median returns the median of xs (NaN when empty).
func Median(xs []float64) float64 { return Quantile(xs, 0.5) }

func sorted(xs []float64) []float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s
}

// RemoveOutliers returns the samples of xs inside [Q1 - k·IQR, Q3 + k·IQR]
// (k = factor) and how many it dropped. NaNs are dropped too. With fewer
// than four samples the quartiles mean nothing and only NaNs go.
func RemoveOutliers(xs []float64, factor float64) (kept []float64, dropped int) {
	clean := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			clean = append(clean, x)
		}
	}
	dropped = len(xs) - len(clean)
	if len(clean) < 4 {
		return clean, dropped
	}
	s := sorted(clean)
	q1, q3 := quantileSorted(s, 0.25), quantileSorted(s, 0.75)
	iqr := q3 - q1
	lo, hi := q1-factor*iqr, q3+factor*iqr
	kept = clean[:0:0]
	for _, x := range clean {
		if x >= lo && x <= hi {
			kept = append(kept, x)
		}
	}
	return kept, dropped + len(clean) - len(kept)
}

// MannWhitney is the result of a two-sided Mann–Whitney U test of b
// against a.
type MannWhitney struct {
	U float64 // U of b: the number of pairs (a_i, b_j) with b_j > a_i, ties counting one half
	Z float64 // standardised U, continuity- and tie-corrected
	P float64 // two-sided p-value, normal approximation
}

// MannWhitneyU tests whether b tends to be larger or smaller than a.
func MannWhitneyU(a, b []float64) (MannWhitney, error) {
	n, m := len(a), len(b)
	if n < 2 || m < 2 {
		return MannWhitney{}, ErrTooFew
	}
	type obs struct {
		v   float64
		inB bool
	}
	all := make([]obs, 0, n+m)
	for _, v := range a {
		all = append(all, obs{v, false})
	}
	for _, v := range b {
		all = append(all, obs{v, true})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	var rankB, tieTerm float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // mean of ranks i+1..j
		for k := i; k < j; k++ {
			if all[k].inB {
				rankB += rank
			}
		}
		t := float64(j - i)
		tieTerm += t*t*t - t
		i = j
	}
	fn, fm := float64(n), float64(m)
	u := rankB - fm*(fm+1)/2
	mean := fn * fm / 2
	sd := math.Sqrt(tieVariance(fn, fm, tieTerm))
	r := MannWhitney{U: u, P: 1}
	if sd == 0 {
		return r, nil // every sample equal: no evidence of anything
	}
	d := u - mean
	// Continuity correction: U moves in steps of one half.
	switch {
	case d > 0.5:
		d -= 0.5
	case d < -0.5:
		d += 0.5
	default:
		d = 0
	}
	r.Z = d / sd
	r.P = 2 * normalSF(math.Abs(r.Z))
	if r.P > 1 {
		r.P = 1
	}
	return r, nil
}

// tieVariance is the variance of U under the null hypothesis, corrected
// for ties (tieTerm = Σ t³ - t over tie groups).
func tieVariance(n, m, tieTerm float64) float64 {
	N := n + m
	return n * m / 12 * ((N + 1) - tieTerm/(N*(N-1)))
}

// Shift is the Hodges–Lehmann estimate of how much b is shifted from a
// (b - a, in the samples' unit) with its confidence interval.
type Shift struct {
	Estimate float64 // median of all pairwise differences b_j - a_i
	Lo, Hi   float64 // the confidence interval's bounds
	Level    float64 // the interval's confidence level, e.g. 0.95
	N, M     int     // samples of a and b used
}

// SpansZero reports whether the interval contains no shift at all: then
// the data show no detectable difference.
func (s Shift) SpansZero() bool { return s.Lo <= 0 && s.Hi >= 0 }

// HalfWidth is half the interval's width, the resolution the samples give.
func (s Shift) HalfWidth() float64 { return (s.Hi - s.Lo) / 2 }

// HodgesLehmann estimates the shift of b from a and its confidence
// interval at level (0.95 for 95%) by inverting the Mann–Whitney test: the
// interval runs between the order statistics of the n·m pairwise
// differences that the test at that level would not reject, with the
// tie-corrected normal approximation for their rank. It costs O(n·m)
// memory: a few hundred intervals per group are a few hundred thousand
// differences.
func HodgesLehmann(a, b []float64, level float64) (Shift, error) {
	n, m := len(a), len(b)
	if n < 2 || m < 2 {
		return Shift{}, ErrTooFew
	}
	d := make([]float64, 0, n*m)
	for _, y := range b {
		for _, x := range a {
			d = append(d, y-x)
		}
	}
	sort.Float64s(d)
	s := Shift{Estimate: quantileSorted(d, 0.5), Level: level, N: n, M: m}
	// Ties in the pooled samples shrink U's variance; use the same
	// correction as the test so that the two agree.
	pooled := append(append(make([]float64, 0, n+m), a...), b...)
	sort.Float64s(pooled)
	var tieTerm float64
	for i := 0; i < len(pooled); {
		j := i
		for j < len(pooled) && pooled[j] == pooled[i] {
			j++
		}
		t := float64(j - i)
		tieTerm += t*t*t - t
		i = j
	}
	fn, fm := float64(n), float64(m)
	z := NormalQuantile(1 - (1-level)/2)
	k := int(math.Floor(fn*fm/2 - z*math.Sqrt(tieVariance(fn, fm, tieTerm))))
	if k < 0 {
		k = 0
	}
	if k > len(d)/2-1 {
		k = len(d)/2 - 1
	}
	if k < 0 {
		k = 0
	}
	// 1-based order statistics k+1 and nm-k.
	s.Lo, s.Hi = d[k], d[len(d)-1-k]
	return s, nil
}

// IntervalsFor estimates how many samples per group a comparison needs to
// detect an absolute shift effect with the given power (0.8 for 80%) by a
// two-sided test at level (0.95), given the interval half-width halfWidth
// its n samples per group gave at that level. The interval narrows as one
// over the square root of the sample count, so the answer is
// n · ((z_level + z_power) · σ̂ / effect)², σ̂ = halfWidth / z_level. It
// returns 0 when the inputs say nothing (no width or no effect).
func IntervalsFor(halfWidth float64, n int, effect, level, power float64) int {
	effect = math.Abs(effect)
	if halfWidth <= 0 || n <= 0 || effect == 0 || math.IsNaN(halfWidth) {
		return 0
	}
	za := NormalQuantile(1 - (1-level)/2)
	zb := NormalQuantile(power)
	se := halfWidth / za
	r := (za + zb) * se / effect
	return int(math.Ceil(float64(n) * r * r))
}

// normalSF is the standard normal survival function, P(Z > z).
func normalSF(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

// NormalQuantile is the inverse of the standard normal distribution
// function, for 0 < p < 1.
func NormalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }
