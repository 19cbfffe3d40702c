//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"testing"
)

// BenchmarkForwardFoldAB compares matMulFold (a LoRA's B·t added to each
// run of W·x's rows while they are in cache) with the two products one
// after the other (matMul, then B's matMul adding): a quarter of the
// 0.6B lm_head at M = 128 (the head's chunk until it became 512) and
// three layer shapes at M = 512, rank 32, W cold (coldMats) as in a
// training step, on every worker: medians of paired ratios fold/two of
// process CPU time; below 1 the fold is faster.
func BenchmarkForwardFoldAB(b *testing.B) {
	if !fwdAsm {
		b.Skip("the fold runs on the AVX-512 kernels")
	}
	for _, sh := range [][3]int{{37984, 1024, 128}, {3072, 1024, 512}, {2048, 1024, 512}, {1024, 2048, 512}, {1024, 3072, 512}, {1024, 2048, 256}, {1024, 3072, 256}} {
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

// BenchmarkTrainLinearPackAB compares LoRA layers' forward products on
// one packed batch (packedIn, as the training forward runs q, k and v,
// and gate and up) with the same products packing the batch each
// (matMul for A, then matMulFold for W, as before): the 0.6B shapes at
// M = 1024, rank 32, W cold, every worker; the median of paired ratios
// of process CPU time, shared over separate; below 1, packing once is
// faster.
func BenchmarkTrainLinearPackAB(b *testing.B) {
	const cols, m, rank = 1024, 1024, 32
	xs := tileRows(m, cols, 2)
	for _, set := range [][]int{{2048, 1024, 1024}, {3072, 3072}, {2048}} {
		type layer struct {
			ws     []mat
			a, b   mat
			ys, ts [][]float32
		}
		ls := make([]layer, len(set))
		for i, rows := range set {
			ls[i].ws, ls[i].ys, ls[i].ts = coldMats(rows, cols), tileRows(m, rows, 3), tileRows(m, rank, 6)
			ls[i].a, _ = randMats(rank, cols, 4)
			ls[i].b, _ = randMats(rows, rank, 5)
		}
		next := 0
		w := func(l layer) mat { return l.ws[next%len(l.ws)] }
		separate := func() {
			next++
			for _, l := range ls {
				matMul(l.a, xs, l.ts, false)
				matMulFold(w(l), xs, l.ys, l.b, l.ts, false)
			}
		}
		shared := func() {
			next++
			in := packIn(w(ls[0]), xs)
			for _, l := range ls {
				in.linear(w(l), nil, &trainModule{pair: &loraPair{a: l.a, b: l.b}}, xs, l.ys, l.ts, false)
			}
			in.release()
		}
		b.Run(fmt.Sprintf("%v/M=%d", set, m), func(b *testing.B) {
			for b.Loop() {
				b.ReportMetric(pairedRatioBy(processCPU, 11, separate, shared), "cpu-shared/separate")
			}
		})
	}
}
