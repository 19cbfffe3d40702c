package engine

import (
	"fmt"
	"slices"
	"testing"
)

// BenchmarkBatchedProducts is what batching datums (batchpass.go) does to
// one product of the 0.6B shape: 2 sequences of 512 tokens (or 8 of 128),
// each its own product, against one product over their 1,024 rows, with cold
// weights (coldMats), alternated in each iteration. It reports the
// median of the batched CPU time over the split's (x-batched-cpu < 1: the
// batch is cheaper), forward (matMul) and for input gradients (matMulT).
func BenchmarkBatchedProducts(b *testing.B) {
	c := qwen3Small()
	for _, sh := range [][2]int{{c.Intermediate, c.Hidden}, {c.Hidden, c.Intermediate}} {
		ws := coldMats(sh[0], sh[1])
		for _, back := range []bool{false, true} {
			in, out := sh[1], sh[0]
			name := "matMul"
			if back {
				in, out, name = sh[0], sh[1], "matMulT"
			}
			xs, _ := randMats(1024, in, 7)
			ys := rowsOf(make([]float32, 1024*out), 1024, out)
			xr := rowsOf(xs.data, 1024, in)
			prod := func(w mat, x, y [][]float32) {
				if back {
					matMulT(w, x, y, false)
				} else {
					matMul(w, x, y, false)
				}
			}
			for _, seq := range []int{128, 512} {
				b.Run(fmt.Sprintf("%s-%dx%d-%dx%d", name, sh[0], sh[1], 1024/seq, seq), func(b *testing.B) {
					batchedProducts(b, ws, prod, xr, ys, seq)
				})
			}
		}
	}
}

// batchedProducts alternates the products of seq rows at a time with one
// over all rows and reports the median ratio of their CPU times.
func batchedProducts(b *testing.B, ws []mat, prod func(w mat, x, y [][]float32), xr, ys [][]float32, seq int) {
	var ratios []float64
	next := 0
	for b.Loop() {
		c0 := processCPU()
		for r := 0; r < len(xr); r += seq {
			next = (next + 1) % len(ws)
			prod(ws[next], xr[r:r+seq], ys[r:r+seq])
		}
		c1 := processCPU()
		next = (next + 1) % len(ws)
		prod(ws[next], xr, ys)
		ratios = append(ratios, (processCPU()-c1)/(c1-c0))
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "x-batched-cpu")
}

// coldMats is enough random rows × cols matrices (at least two) that using
// them in turn passes the L3 (384 MiB) between uses of each.
func coldMats(rows, cols int) []mat {
	ws := make([]mat, max(2, (384<<20)/(4*rows*cols)))
	for i := range ws {
		ws[i], _ = randMats(rows, cols, uint64(i+1))
	}
	return ws
}
