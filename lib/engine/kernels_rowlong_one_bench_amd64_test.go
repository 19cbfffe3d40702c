//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"os"
	"testing"
)

// BenchmarkDecodeRowsOneTokens decodes the Qwen3-0.6B shape (bfloat16, or
// float32 with ROWLONG_DTYPE=f32) switching rowsLongOne (a piece's rows in
// one fwdRowsLong<F32|BF16> call) on and off after every token, pairing
// neighbouring tokens as BenchmarkDecodeAheadTokens does: the off token's
// time over the on one's (above 1: one call faster), wall and process
// CPU, median and lower quartile over ROWLONG_TOKENS (default 64) tokens a
// decode and ROWLONG_ROUNDS decodes (default 4), and the wall ratios
// grouped by the pair's read rate (aheadBuckets). ROWLONG_CONTROL=1
// labels the tokens but decodes all with rowsLongOne off;
// ROWLONG_SWITCH=t0 switches rowsLongT0 instead (rowsLongOne on). Run with
// -benchtime 1x.
func BenchmarkDecodeRowsOneTokens(b *testing.B) {
	rounds, tokens := envInt("ROWLONG_ROUNDS", 4), envInt("ROWLONG_TOKENS", 64)
	dtype := benchDType("ROWLONG_DTYPE")
	control := os.Getenv("ROWLONG_CONTROL") == "1"
	// ROWLONG_SWITCH=t0: rowsLongT0 switched instead, rowsLongOne on.
	t0 := os.Getenv("ROWLONG_SWITCH") == "t0"
	m := qwen3SmallOf(b, "rowlong-one", dtype)
	defer func(o, t bool) { rowsLongOne, rowsLongT0 = o, t }(rowsLongOne, rowsLongT0)
	bytes := matrixParams(m.cfg) * 2
	if dtype == "f32" {
		bytes *= 2
	}
	name := "one"
	if t0 {
		name = "T0"
	}
	if control {
		name = "control"
	}
	for b.Loop() {
		l0 := loadAvg()
		var all, cpu []float64
		buckets := make([][]float64, len(aheadBuckets)+1)
		for i := range rounds {
			var on []bool
			ws, cs := timeTokens(b, m, tokens, func(t int) {
				label := (t%2 == 1) == (i%2 == 0)
				on = append(on[:t], label)
				if t0 {
					rowsLongOne, rowsLongT0 = true, label && !control
				} else {
					rowsLongOne = label && !control
				}
			})
			for j := 1; j < len(ws); j++ {
				o, n := j-1, j
				if on[o] {
					o, n = n, o
				}
				r, rate := ws[o]/ws[n], 2*bytes/(ws[o]+ws[n])/1e9
				all, cpu = append(all, r), append(cpu, cs[o]/cs[n])
				k := 0
				for k < len(aheadBuckets) && rate >= aheadBuckets[k] {
					k++
				}
				buckets[k] = append(buckets[k], r)
			}
		}
		line := fmt.Sprintf("%s %-7s wall med %.3f q1 %.3f cpu med %.3f q1 %.3f (%d pairs) |", dtype, name, median(all), quartileLow(all), median(cpu), quartileLow(cpu), len(all))
		for k, bs := range buckets {
			lo := 0.0
			if k > 0 {
				lo = aheadBuckets[k-1]
			}
			if len(bs) > 0 {
				line += fmt.Sprintf(" >=%.0f: %.3f q1 %.3f n %d |", lo, median(bs), quartileLow(bs), len(bs))
			}
		}
		fmt.Fprintf(os.Stderr, "%s load %s -> %s\n", line, l0, loadAvg())
		b.ReportMetric(median(all), "off/on-wall")
	}
}
