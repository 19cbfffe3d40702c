//go:build goexperiment.simd && amd64

package engine

import (
	"cmp"
	"fmt"
	"os"
	"strings"
	"testing"
)

// BenchmarkDecodeAheadTokens decodes the Qwen3-0.6B shape (bfloat16, or
// float32 with ROWLONG_DTYPE=f32) switching fwdRowsLong's kernel
// (rowLongVariant) between the product's and each of ROWLONG_VARIANTS
// (comma-separated names of rowLongKernels, default "A0") after every token, pairing
// neighbouring tokens as pairTokens does: the product's token's time over
// the variant's (above 1: the variant faster), wall and process CPU,
// median and lower quartile over ROWLONG_TOKENS (default 64) tokens a
// decode and ROWLONG_ROUNDS decodes (default 4), and the wall ratios
// grouped by the pair's read rate (aheadBuckets: the host's phase; its
// fast one puts tokens at 41-46 GB/s). "A1K" is the control; "main" is
// decoding as main did before 2026-11-30 (the paced kernel, its cut, the
// lm_head's own fork and unpooled jobs). Run with -benchtime 1x.
func BenchmarkDecodeAheadTokens(b *testing.B) {
	rounds, tokens := envInt("ROWLONG_ROUNDS", 4), envInt("ROWLONG_TOKENS", 64)
	dtype := benchDType("ROWLONG_DTYPE")
	names := strings.Split(cmp.Or(os.Getenv("ROWLONG_VARIANTS"), "A0"), ",")
	m := qwen3SmallOf(b, "rowlong-ahead", dtype)
	defer func(v int, c func([]rowPiece, []mat, int, int) []rowPiece, h, p bool) {
		rowLongVariant, decodeCut, fuseHead, poolJobs = v, c, h, p
	}(rowLongVariant, decodeCut, fuseHead, poolJobs)
	bytes := matrixParams(m.cfg) * 2
	if dtype == "f32" {
		bytes *= 2
	}
	for b.Loop() {
		for _, name := range names {
			vname := name
			// "main": main's decode before 2026-11-30 (the paced kernel,
			// decodePieces' 1/(4·workers) share of at least 32K weights,
			// the lm_head outside the step's fork and forkJoin's jobs
			// allocated) against this one, all at once.
			mainCut := vname == "main"
			if mainCut {
				vname = "A1KP"
			}
			v := rowLongVariantIndex(vname)
			if v < 0 {
				b.Fatalf("ROWLONG_VARIANTS: no variant %q (a name in rowLongKernels, or main)", name)
			}
			l0 := loadAvg()
			set := func(on bool) {
				rowLongVariant, decodeCut = 0, decodePiecesTo
				fuseHead, poolJobs = true, true
				if on {
					rowLongVariant = v
					if mainCut {
						decodeCut = func(dst []rowPiece, ms []mat, align, workers int) []rowPiece {
							return cutPieces(dst, ms, align, 4*workers, 1<<15)
						}
						fuseHead, poolJobs = false, false
					}
				}
			}
			// Each pair's ratio (the product's token's time over the
			// variant's), grouped by the pair's rate: the phases.
			var all, cpu []float64
			buckets := make([][]float64, len(aheadBuckets)+1)
			for i := range rounds {
				var on []bool
				ws, cs := timeTokens(b, m, tokens, func(t int) {
					label := (t%2 == 1) == (i%2 == 0)
					on = append(on[:t], label)
					set(label)
				})
				for j := 1; j < len(ws); j++ {
					o, n := j-1, j
					if on[o] {
						o, n = n, o
					}
					r, rate := ws[o]/ws[n], 2*bytes/(ws[o]+ws[n])/1e9 // the pair's rate: no bias to either
					all, cpu = append(all, r), append(cpu, cs[o]/cs[n])
					k := 0
					for k < len(aheadBuckets) && rate >= aheadBuckets[k] {
						k++
					}
					buckets[k] = append(buckets[k], r)
				}
			}
			line := fmt.Sprintf("%s %-9s wall med %.3f q1 %.3f cpu med %.3f q1 %.3f (%d pairs) |", dtype, name, median(all), quartileLow(all), median(cpu), quartileLow(cpu), len(all))
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
		}
	}
}

// aheadBuckets are BenchmarkDecodeAheadTokens' bounds of the product's
// token's read rate (GB/s) by which it groups the pairs.
var aheadBuckets = []float64{25, 32, 38}
