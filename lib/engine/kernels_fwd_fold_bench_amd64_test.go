//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"testing"
)

// BenchmarkForwardFoldAB compares matMulFold (a LoRA's B·t added to each
// run of W·x's rows while they are in cache) with the two products one
// after the other (matMul, then B's matMul adding): a quarter of the
// 0.6B lm_head at M = 128 (headChunk) and three layer shapes at M = 512,
// rank 32, W cold (coldMats) as in a training step, on every worker:
// medians of paired ratios fold/two of process CPU time; below 1 the
// fold is faster.
func BenchmarkForwardFoldAB(b *testing.B) {
	if !fwdAsm {
		b.Skip("the fold runs on the AVX-512 kernels")
	}
	for _, sh := range [][3]int{{37984, 1024, 128}, {3072, 1024, 512}, {2048, 1024, 512}, {1024, 2048, 512}} {
		rows, cols, m := sh[0], sh[1], sh[2]
		ws, xs, ys := coldMats(rows, cols), tileRows(m, cols, 2), tileRows(m, rows, 3)
		bm, _ := randMats(rows, 32, 9)
		ts := tileRows(m, 32, 4)
		next := 0
		two := func() {
			next = (next + 1) % len(ws)
			matMul(ws[next], xs, ys, false)
			matMul(bm, ts, ys, true)
		}
		fold := func() {
			next = (next + 1) % len(ws)
			matMulFold(ws[next], xs, ys, bm, ts, false)
		}
		b.Run(fmt.Sprintf("%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
			for b.Loop() {
				b.ReportMetric(pairedRatioBy(processCPU, 9, two, fold), "cpu-fold/two")
				onlyW := func() { next = (next + 1) % len(ws); matMul(ws[next], xs, ys, false) }
				onlyB := func() { matMul(bm, ts, ys, true) }
				b.ReportMetric(pairedRatioBy(processCPU, 9, onlyW, onlyB), "cpu-B/W")
			}
		})
	}
}
