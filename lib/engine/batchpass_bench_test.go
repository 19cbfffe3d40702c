package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// BenchmarkBatchedProducts is what batching datums (batchpass.go) does to
// one product of the 0.6B shape: 2 sequences of 512 tokens (or 8 of 128),
// each its own product, against products over groups of their rows (all
// 1,024 of them, or groups of 256 or 512 rows: "-in512"), with cold
// weights (coldMats), alternated in each iteration. It reports the
// median of the grouped CPU time over the split's (x-batched-cpu < 1: the
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
			for _, g := range [][2]int{{128, 1024}, {128, 512}, {128, 256}, {512, 1024}} {
				seq, group := g[0], g[1]
				b.Run(fmt.Sprintf("%s-%dx%d-%dx%d-in%d", name, sh[0], sh[1], 1024/seq, seq, group), func(b *testing.B) {
					batchedProducts(b, ws, prod, xr, ys, seq, group)
				})
			}
		}
	}
}

// batchedProducts alternates the products of seq rows at a time with
// those of group rows at a time and reports the median ratio of their CPU
// times.
func batchedProducts(b *testing.B, ws []mat, prod func(w mat, x, y [][]float32), xr, ys [][]float32, seq, group int) {
	var ratios []float64
	next := 0
	pieces := func(rows int) float64 {
		c0 := processCPU()
		for r := 0; r < len(xr); r += rows {
			next = (next + 1) % len(ws)
			prod(ws[next], xr[r:r+rows], ys[r:r+rows])
		}
		return processCPU() - c0
	}
	for b.Loop() {
		split := pieces(seq)
		ratios = append(ratios, pieces(group)/split)
	}
	b.ReportMetric(median(ratios), "x-batched-cpu")
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

// BenchmarkBatchRowsStep is batchRows' whole-step trade on the 0.6B widths
// with 4 layers: each iteration runs one forward_backward over 8 × 128
// tokens (or 2 × 512) with the datums one by one, in groups of at most
// 512 rows (batchRows) and of at most 2,048 (its first value), in turn, and
// reports the medians of the grouped CPU times over the one-by-one's
// (x-512-cpu, x-2048-cpu; < 1: grouping is cheaper).
func BenchmarkBatchRowsStep(b *testing.B) {
	defer func(old int) { batchRows = old }(batchRows)
	m := benchStepModel(b, "qwen3-wide4", 4)
	loss, _ := NewLoss(LossCrossEntropy, nil)
	for _, sh := range [][2]int{{8, 128}, {2, 512}} {
		b.Run(fmt.Sprintf("%dx%d", sh[0], sh[1]), func(b *testing.B) {
			tr := mustTrainer(b, m, LoRAConfig{Rank: 32, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 1})
			data := forLoss(testData(256, 3, slices.Repeat([]int{sh[1]}, sh[0])...), LossCrossEntropy)
			step := func(rows int) float64 {
				batchRows = rows
				c0 := processCPU()
				if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
					b.Fatal(err)
				}
				return processCPU() - c0
			}
			step(2048) // sizes the arena for the largest groups
			var r512, r2048 []float64
			for b.Loop() {
				alone := step(1)
				r512 = append(r512, step(512)/alone)
				r2048 = append(r2048, step(2048)/alone)
			}
			b.ReportMetric(median(r512), "x-512-cpu")
			b.ReportMetric(median(r2048), "x-2048-cpu")
		})
	}
}
