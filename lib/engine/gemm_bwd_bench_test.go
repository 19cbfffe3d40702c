//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"math"
	"runtime"
	"testing"
)

// BenchmarkBackwardVsForward reports, on one thread, the median of paired
// time ratios of the backward products to the forward product with the
// same FLOPs on Qwen3-0.6B shapes at 128 and 512 tokens: matMulT through
// a base matrix against matMul through it, and outerAcc (a LoRA matrix's
// gradient) against matMul through a matrix of its shape. Below 1 the
// backward is the more efficient. Run with -cpu 1 -benchtime 1x.
func BenchmarkBackwardVsForward(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, m := range []int{128, 512} {
		for _, sh := range [][2]int{{3072, 1024}, {1024, 3072}, {2048, 1024}, {1024, 1024}} {
			rows, cols := sh[0], sh[1]
			w, _ := randMats(rows, cols, 1)
			xs, ys := tileRows(m, cols, 2), tileRows(m, rows, 3)
			fwd := func() { matMul(w, xs, ys, false) }
			bwd := func() { matMulT(w, ys, xs, true) }
			b.Run(fmt.Sprintf("matMulT-%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
				for b.Loop() {
					b.ReportMetric(pairedRatio(7, fwd, bwd), "bwd/fwd")
				}
			})
		}
		for _, sh := range [][2]int{{3072, 32}, {32, 1024}} {
			rows, cols := sh[0], sh[1]
			us, vs := tileRows(m, rows, 2), tileRows(m, cols, 3)
			w, _ := randMats(rows, cols, 1)
			dst := make([]float32, rows*cols)
			fwd := func() { matMul(w, vs, us, false) }
			bwd := func() { outerAcc(dst, rows, cols, us, vs) }
			b.Run(fmt.Sprintf("outerAcc-%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
				for b.Loop() {
					b.ReportMetric(pairedRatio(7, fwd, bwd), "bwd/fwd")
				}
			})
		}
	}
}

// BenchmarkBackwardPanel compares the 6×4 tile reading a packed panel of
// kcAsm rows (256 KiB, in L2) with the same tile reading a 128-row strip
// (32 KiB, in L1), the same FLOPs, on one thread: the median of paired
// time ratios (L2 over L1).
func BenchmarkBackwardPanel(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := make([]float32, 6*64)
	a := make([]float32, 6*kcAsm)
	p := make([]float32, kcAsm*64)
	tile := func(k, calls int) func() {
		return func() {
			for range calls {
				bwdRF6x4(&c[0], 256, &a[0], uintptr(4*k), &p[0], 256, k, 0xffff)
			}
		}
	}
	const l1Rows = 128
	for b.Loop() {
		b.ReportMetric(pairedRatio(7, tile(l1Rows, 1000*kcAsm/l1Rows), tile(kcAsm, 1000)), "l2/l1")
	}
}

// BenchmarkBackwardLoRAFold compares, on one thread, matMulTLoRA (a LoRA
// A's rows summed in the base matrix's tiles) with matMulT through the
// base and then through A, on Qwen3-0.6B shapes with rank 32 at 128-1024
// tokens: the median of paired time ratios (fold over two calls; below 1
// the fold is faster). Run with -cpu 1 -benchtime 1x.
func BenchmarkBackwardLoRAFold(b *testing.B) {
	for _, m := range []int{128, 512, 1024} {
		for _, sh := range [][2]int{{3072, 1024}, {1024, 3072}, {2048, 1024}, {1024, 2048}} {
			rows, cols := sh[0], sh[1]
			w, _ := randMats(rows, cols, 1)
			a, _ := randMats(32, cols, 4)
			xs, ys, ts := tileRows(m, cols, 2), tileRows(m, rows, 3), tileRows(m, 32, 5)
			two := func() { matMulT(w, ys, xs, false); matMulT(a, ts, xs, true) }
			fold := func() { matMulTLoRA(w, ys, a, ts, xs, false) }
			b.Run(fmt.Sprintf("%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				for b.Loop() {
					b.ReportMetric(pairedRatio(9, two, fold), "fold/two")
				}
			})
		}
	}
}

// BenchmarkOuterSplitAB compares outerAcc on a LoRA A's gradient shape
// (rank 32 rows) split among the cores by columns (outerSplitColsRows,
// the default) with the split by rows: medians of paired ratios of
// process CPU time and of wall time (below 1 the column split is faster).
// Run with the default -cpu (the split needs two cores) and -benchtime 1x.
func BenchmarkOuterSplitAB(b *testing.B) {
	def := outerSplitColsRows
	defer func() { outerSplitColsRows = def }()
	for _, m := range []int{128, 512} {
		for _, cols := range []int{1024, 2048, 3072} {
			us, vs := tileRows(m, 32, 2), tileRows(m, cols, 3)
			dst := make([]float32, 32*cols)
			run := func(t int) func() {
				return func() { outerSplitColsRows = t; outerAcc(dst, 32, cols, us, vs) }
			}
			b.Run(fmt.Sprintf("32x%d/M=%d", cols, m), func(b *testing.B) {
				for b.Loop() {
					b.ReportMetric(pairedRatioBy(processCPU, 15, run(0), run(def)), "cpu-cols/rows")
					b.ReportMetric(pairedRatioBy(wallClock, 15, run(0), run(def)), "wall-cols/rows")
				}
			})
		}
	}
}

// BenchmarkBackwardFMAShare reports, on one thread, matMulT's rate as a
// share of the 512-bit FMA loop's (fmaChains16, the same FLOPs, run right
// before it: the median of paired ratios of thread CPU time) on the
// Qwen3-0.6B shapes at M = 512, 1024 and 2048, each call on the next of
// enough copies of W (384 MiB in all) that W comes from DRAM, as in a
// training step (of-fma-loop), the same with one W, hot in L3 (hotW), and
// the time with the same values as bfloat16 W over float32 (bf16/f32).
// Its figures are comparable across builds run interleaved on a loaded
// machine. Run with -cpu 1 -benchtime 1x.
func BenchmarkBackwardFMAShare(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sink := make([]float32, 16)
	for _, sh := range [][2]int{{3072, 1024}, {1024, 3072}, {2048, 1024}, {1024, 2048}} {
		rows, cols := sh[0], sh[1]
		ws := make([]mat, (384<<20)/(4*rows*cols))
		bs := make([]mat, len(ws)) // the same values in bfloat16
		for i := range ws {
			ws[i], _ = randMats(rows, cols, uint64(i))
			bs[i] = mat{rows: rows, cols: cols, bf: make([]uint16, rows*cols)}
			for j, v := range ws[i].data {
				bs[i].bf[j] = uint16(math.Float32bits(v) >> 16)
				ws[i].data[j] = math.Float32frombits(uint32(bs[i].bf[j]) << 16)
			}
		}
		for _, m := range []int{512, 1024, 2048} {
			xs, ys := tileRows(m, cols, 2), tileRows(m, rows, 3)
			i := 0
			prod := func() { matMulT(ws[i%len(ws)], ys, xs, false); i++ }
			loop := func() { fmaChains16(rows*cols*m/(10*16), sink) }
			hot := func() { matMulT(ws[0], ys, xs, false) }
			bf := func() { matMulT(bs[i%len(bs)], ys, xs, false); i++ }
			b.Run(fmt.Sprintf("%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
				for b.Loop() {
					b.ReportMetric(1/pairedRatio(9, loop, prod), "of-fma-loop")
					b.ReportMetric(1/pairedRatio(9, loop, hot), "hotW")
					b.ReportMetric(pairedRatio(9, prod, bf), "bf16/f32")
				}
			})
		}
	}
}

// BenchmarkBackwardZeroStart compares, on one thread, matMulT and
// matMulTLoRA storing into xs (tiles of the first block of weight rows
// starting at zero) with the way they did it before: clearing xs and
// adding to it, on the Qwen3-0.6B shapes at 512 and 1024 tokens, W cold
// (coldMats): the median of paired time ratios (below 1 the zero start
// is faster). Run with -cpu 1 -benchtime 1x.
func BenchmarkBackwardZeroStart(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, sh := range [][2]int{{3072, 1024}, {1024, 3072}, {2048, 1024}, {1024, 2048}} {
		rows, cols := sh[0], sh[1]
		ws := coldMats(rows, cols)
		a, _ := randMats(32, cols, 4)
		for _, m := range []int{512, 1024} {
			xs, ys, ts := tileRows(m, cols, 2), tileRows(m, rows, 3), tileRows(m, 32, 5)
			i := 0
			run := func(lora, cleared bool) func() {
				return func() {
					if cleared {
						for _, x := range xs {
							clear(x)
						}
					}
					inputGrad(ws[i%len(ws)], a, ys, ts, xs, lora, cleared)
					i++
				}
			}
			b.Run(fmt.Sprintf("%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
				for b.Loop() {
					b.ReportMetric(pairedRatio(9, run(false, true), run(false, false)), "zero/cleared")
					b.ReportMetric(pairedRatio(9, run(true, true), run(true, false)), "lora-zero/cleared")
				}
			})
		}
	}
}

// BenchmarkBackwardKCWhole compares, on one thread, matMulT and
// matMulTLoRA summing a term of up to kcWhole weight rows in one block
// with blocks of kcAsm rows (each tile then loads and stores its part of
// xs once per block), on the Qwen3-0.6B shapes taller than kcAsm at 512
// and 1024 tokens, W cold on 2 MiB pages (hugeColdMats): the median of
// paired time ratios (below 1 the whole term is faster). Run with -cpu 1
// -benchtime 1x.
func BenchmarkBackwardKCWhole(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	def := kcWhole
	defer func() { kcWhole = def }()
	for _, sh := range [][2]int{{3072, 1024}, {2048, 1024}} {
		rows, cols := sh[0], sh[1]
		ws := hugeColdMats(rows, cols)
		a, _ := randMats(32, cols, 4)
		for _, m := range []int{512, 1024} {
			xs, ys, ts := tileRows(m, cols, 2), tileRows(m, rows, 3), tileRows(m, 32, 5)
			i := 0
			run := func(lora bool, kw int) func() {
				return func() {
					kcWhole = kw
					inputGrad(ws[i%len(ws)], a, ys, ts, xs, lora, false)
					i++
				}
			}
			b.Run(fmt.Sprintf("%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
				for b.Loop() {
					b.ReportMetric(pairedRatio(9, run(false, 0), run(false, def)), "whole/blocks")
					b.ReportMetric(pairedRatio(9, run(true, 0), run(true, def)), "lora-whole/blocks")
				}
			})
		}
	}
}

// hugeColdMats is coldMats with each matrix on transparent huge pages
// (adviseHuge before its first write), as a training step's weights are:
// on 4 KiB pages each of a panel's rows, 4-12 KiB apart, is a page walk.
func hugeColdMats(rows, cols int) []mat {
	ws := make([]mat, max(2, (384<<20)/(4*rows*cols)))
	for i := range ws {
		d := make([]float32, rows*cols)
		adviseHuge(d)
		fill(d, newRNG(uint64(i+1)), 0.05)
		ws[i] = mat{rows: rows, cols: cols, data: d}
	}
	return ws
}

// BenchmarkLoRAGradFMAShare reports, on one thread, the rate of a LoRA
// layer's backward products other than the base matMulT as a share of the
// 512-bit FMA loop's (the same FLOPs, the median of paired thread-CPU
// ratios) on the Qwen3-0.6B shapes with rank 32 at 512 tokens, the
// layer's input and output gradient on 2 MiB pages as the step's arena: A's and
// B's gradients (outerAcc) and the gradient of A's outputs (matMulT
// through B). Run with -cpu 1 -benchtime 1x.
func BenchmarkLoRAGradFMAShare(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sink := make([]float32, 16)
	const m, rank = 512, 32
	for _, sh := range [][2]int{{3072, 1024}, {1024, 3072}, {2048, 1024}} {
		out, in := sh[0], sh[1]
		xs, dys, ts, dts := hugeRows(m, in, 2), hugeRows(m, out, 3), tileRows(m, rank, 4), tileRows(m, rank, 5)
		gA, gB := make([]float32, rank*in), make([]float32, out*rank)
		bm, _ := randMats(out, rank, 6)
		loop := func(fmas int) func() { return func() { fmaChains16(fmas/(10*16), sink) } }
		cases := []struct {
			name string
			run  func()
		}{
			{"gradA", func() { outerAcc(gA, rank, in, dts, xs) }},
			{"gradB", func() { outerAcc(gB, out, rank, dys, ts) }},
			{"dts", func() { matMulT(bm, dys, dts, false) }},
		}
		b.Run(fmt.Sprintf("%dx%d", out, in), func(b *testing.B) {
			for b.Loop() {
				for i, c := range cases {
					n := []int{rank * in, out * rank, out * rank}[i] * m
					b.ReportMetric(1/pairedRatio(9, loop(n), c.run), c.name+"-of-fma")
				}
			}
		})
	}
}

// hugeRows is tileRows on transparent huge pages, as a training step's
// activation arena is.
func hugeRows(n, width int, seed uint64) [][]float32 {
	d := make([]float32, n*width)
	adviseHuge(d)
	rs := rowsOf(d, n, width)
	r := newRNG(seed)
	for _, x := range rs {
		fill(x, r, 1)
	}
	return rs
}

// BenchmarkOuterTileFloor compares, on one thread, a LoRA layer's weight
// gradients (outerAcc: A's, rank rows, and B's, rank columns) with the
// tile shape outerTileFloor picks against matMulT's floor of 8, on the
// Qwen3-0.6B shapes with rank 32 at 512 tokens, the inputs on 2 MiB pages:
// the median of paired time ratios (below 1 the default is faster). Run
// with -cpu 1 -benchtime 1x.
func BenchmarkOuterTileFloor(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	def := outerTileFloor
	defer func() { outerTileFloor = def }()
	const m, rank = 512, 32
	for _, sh := range [][2]int{{3072, 1024}, {1024, 3072}, {2048, 1024}} {
		out, in := sh[0], sh[1]
		xs, dys, ts, dts := hugeRows(m, in, 2), hugeRows(m, out, 3), tileRows(m, rank, 4), tileRows(m, rank, 5)
		gA, gB := make([]float32, rank*in), make([]float32, out*rank)
		run := func(floor int, a bool) func() {
			return func() {
				outerTileFloor = floor
				if a {
					outerAcc(gA, rank, in, dts, xs)
				} else {
					outerAcc(gB, out, rank, dys, ts)
				}
			}
		}
		b.Run(fmt.Sprintf("%dx%d", out, in), func(b *testing.B) {
			for b.Loop() {
				b.ReportMetric(pairedRatio(9, run(8, true), run(def, true)), "gradA-default/8")
				b.ReportMetric(pairedRatio(9, run(8, false), run(def, false)), "gradB-default/8")
			}
		})
	}
}

// inputGrad is the benchmarks' input gradient through W (with lora, and
// through the LoRA A a, from ts).
func inputGrad(w, a mat, ys, ts, xs [][]float32, lora, accumulate bool) {
	if lora {
		matMulTLoRA(w, ys, a, ts, xs, accumulate)
		return
	}
	matMulT(w, ys, xs, accumulate)
}

// BenchmarkOuterAccShared compares the LoRA A gradients of layers that
// read the same input (q, k and v: 3 × 32 × 1024; gate and up: 2 × 32 ×
// 1024) as one outerAccShared, each strip of the input packed once, with
// one outerAcc per layer, rank 32, at 512 and 2048 tokens, the input on 2
// MiB pages as the step's arena: medians of paired ratios of thread CPU
// time on one thread (-cpu 1) or of process CPU and wall time on more
// (below 1 the shared pass is faster). Run with -benchtime 1x.
func BenchmarkOuterAccShared(b *testing.B) {
	const rank, in = 32, 1024
	for _, m := range []int{512, 2048} {
		for _, k := range []int{3, 2} {
			xs := hugeRows(m, in, 2)
			dsts, uss := make([][]float32, k), make([][][]float32, k)
			for i := range k {
				dsts[i], uss[i] = make([]float32, rank*in), tileRows(m, rank, uint64(3+i))
			}
			sep := func() {
				for i := range k {
					outerAcc(dsts[i], rank, in, uss[i], xs)
				}
			}
			shared := func() { outerAccShared(dsts, rank, in, uss, xs) }
			b.Run(fmt.Sprintf("%dx%dx%d/M=%d", k, rank, in, m), func(b *testing.B) {
				for b.Loop() {
					if runtime.GOMAXPROCS(0) == 1 {
						b.ReportMetric(pairedRatio(15, sep, shared), "shared/sep")
						continue
					}
					b.ReportMetric(pairedRatioBy(processCPU, 15, sep, shared), "cpu-shared/sep")
					b.ReportMetric(pairedRatioBy(wallClock, 15, sep, shared), "wall-shared/sep")
				}
			})
		}
	}
}
