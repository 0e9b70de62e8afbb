// Package stats is the statistics behind pollproxy's A/B verdict, modelled
// on Kayenta's judge: per-interval samples of two groups, outliers removed
// by the interquartile range, a Mann–Whitney U test, and the Hodges–Lehmann
// estimate of the shift between the groups with its confidence interval.
// For the crossover design (each loop alternating between the pollers)
// it has the paired side: LogContrast turns three consecutive periods of
// one loop into a drift-free difference, and ConfSeq (confseq.go) gives
// the mean of such differences an interval valid however often it is
// read.
//
// Everything here is rank-based, so it assumes nothing about the shape of
// the distributions (CPU per request and latency percentiles are skewed and
// have long tails). The confidence interval and the p-value use the normal
// approximation of U with the tie correction, which is accurate from about
// eight samples per group; Enough reports whether a comparison has them.
//
// The functions take and return plain float64 slices and never modify
// their arguments.
//
// stats.go holds the rank-based tests (Quantile, Median, RemoveOutliers,
// MannWhitneyU, HodgesLehmann, IntervalsFor); confseq.go the paired side
// (LogContrast, ConfSeq).
package stats
