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

// BenchmarkTrainLinearPackAB compares a LoRA layer's forward as
// trainLinear runs it (A and W on one packed batch) with the same two
// calls packing the batch each (matMul for A, then matMulFold), on the
// 0.6B layer shapes at M = 1024, rank 32, W cold, every worker: the
// median of paired ratios of process CPU time, shared over separate;
// below 1, packing once is faster.
func BenchmarkTrainLinearPackAB(b *testing.B) {
	for _, rows := range []int{2048, 1024, 3072} {
		const cols, m, rank = 1024, 1024, 32
		ws, xs, ys := coldMats(rows, cols), tileRows(m, cols, 2), tileRows(m, rows, 3)
		a, _ := randMats(rank, cols, 4)
		bm, _ := randMats(rows, rank, 5)
		ts := tileRows(m, rank, 6)
		next := 0
		w := func() mat { next = (next + 1) % len(ws); return ws[next] }
		separate := func() {
			matMul(a, xs, ts, false)
			matMulFold(w(), xs, ys, bm, ts, false)
		}
		shared := func() { trainLinear(w(), nil, &trainModule{pair: &loraPair{a: a, b: bm}}, xs, ys, ts, false) }
		b.Run(fmt.Sprintf("%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
			for b.Loop() {
				b.ReportMetric(pairedRatioBy(processCPU, 15, separate, shared), "cpu-shared/separate")
			}
		})
	}
}
