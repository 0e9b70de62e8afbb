package encode

import "testing"

// BenchmarkEncode20KiB is encode's CPU per response at a typical page: a
// 20 KiB HTML response through a Writer, as the proxy hands it over in
// one piece, with the loop's pool reusing one encoder (as under load).
// docs/performance.md says how to compare it with nginx and Caddy.
func BenchmarkEncode20KiB(b *testing.B) {
	for _, enc := range []string{Gzip, Zstd} {
		b.Run(enc, func(b *testing.B) {
			var pool Pool
			fe := &frontEnd{}
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				fe.body.Reset()
				fe.closed = false
				serve(&pool, enc, fe, page)
			}
			b.ReportMetric(float64(fe.body.Len())/float64(len(page)), "ratio")
		})
	}
}
