package engine

import (
	"math"
	"runtime"
	"sync"
)

// Numeric kernels. Every output element of a matrix product is summed in
// one fixed order (dot8/dotSeq), whatever the batch size or the number of
// goroutines: results are bit-identical between a request run
// alone and the same request batched with others (batch invariance), which
// keeps seeded sampling reproducible under load.
//
// Products that feed an addition are written float32(a*b) (float64(a*b))
// so the compiler never fuses them into FMA instructions (it may on arm64 or
// GOAMD64=v3): the same inputs give the same bits on every machine.

// mat is a row-major [rows, cols] matrix (PyTorch Linear layout: rows =
// output features, cols = input features), held either as float32 (data) or
// as bfloat16 bits (bf). bfloat16 widens exactly to float32, so both give
// the same results; bf16 halves the memory of large checkpoints.
type mat struct {
	rows, cols int
	data       []float32
	bf         []uint16
}

func (m mat) row(i int) []float32 { return m.data[i*m.cols : (i+1)*m.cols : (i+1)*m.cols] }

// rowInto copies row i into dst as float32.
func (m mat) rowInto(i int, dst []float32) {
	if m.bf == nil {
		copy(dst, m.row(i))
		return
	}
	widenBF16(dst[:m.cols], m.bf[i*m.cols:(i+1)*m.cols])
}

// dot1 is the vector dot product for attention scores: 8 independent
// accumulators hide the floating-point add latency.
func dot1(w, x []float32) float32 {
	if s, ok := dot1Vec(w, x); ok {
		return s
	}
	n := len(x)
	w = w[:n]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= n; i += 8 {
		ww := w[i : i+8 : i+8]
		xx := x[i : i+8 : i+8]
		s0 += float32(ww[0] * xx[0])
		s1 += float32(ww[1] * xx[1])
		s2 += float32(ww[2] * xx[2])
		s3 += float32(ww[3] * xx[3])
		s4 += float32(ww[4] * xx[4])
		s5 += float32(ww[5] * xx[5])
		s6 += float32(ww[6] * xx[6])
		s7 += float32(ww[7] * xx[7])
	}
	for ; i < n; i++ {
		s0 += float32(w[i] * x[i])
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// dot8 computes eight consecutive rows of a matrix (row stride cols, from
// the start of w) against x into y[0:8]. One load of x feeds eight
// multiply-adds, and the eight independent accumulators hide the add
// latency. Each row is summed sequentially in index order; dotSeq does the
// same for leftover rows, so every output element has the same bits however
// rows are grouped, batched or split across goroutines.
//
// This exact shape was the fastest of the variants measured (by thread CPU
// time, 384x128 and 2048x2048): ~9 GFLOP/s against ~3.3 for the plain loop;
// removing the remaining bounds checks by reslicing made it slower.
func dot8(w []float32, cols int, x []float32, y []float32) {
	n := len(x)
	w0, w1, w2, w3 := w[0:n], w[cols:cols+n], w[2*cols:2*cols+n], w[3*cols:3*cols+n]
	w4, w5, w6, w7 := w[4*cols:4*cols+n], w[5*cols:5*cols+n], w[6*cols:6*cols+n], w[7*cols:7*cols+n]
	var a0, a1, a2, a3, a4, a5, a6, a7 float32
	for i, xv := range x {
		a0 += float32(w0[i] * xv)
		a1 += float32(w1[i] * xv)
		a2 += float32(w2[i] * xv)
		a3 += float32(w3[i] * xv)
		a4 += float32(w4[i] * xv)
		a5 += float32(w5[i] * xv)
		a6 += float32(w6[i] * xv)
		a7 += float32(w7[i] * xv)
	}
	y[0], y[1], y[2], y[3], y[4], y[5], y[6], y[7] = a0, a1, a2, a3, a4, a5, a6, a7
}

// dot8bf is dot8 for bfloat16 weights, widened as they are loaded.
func dot8bf(w []uint16, cols int, x []float32, y []float32) {
	n := len(x)
	w0, w1, w2, w3 := w[0:n], w[cols:cols+n], w[2*cols:2*cols+n], w[3*cols:3*cols+n]
	w4, w5, w6, w7 := w[4*cols:4*cols+n], w[5*cols:5*cols+n], w[6*cols:6*cols+n], w[7*cols:7*cols+n]
	var a0, a1, a2, a3, a4, a5, a6, a7 float32
	for i, xv := range x {
		a0 += float32(math.Float32frombits(uint32(w0[i])<<16) * xv)
		a1 += float32(math.Float32frombits(uint32(w1[i])<<16) * xv)
		a2 += float32(math.Float32frombits(uint32(w2[i])<<16) * xv)
		a3 += float32(math.Float32frombits(uint32(w3[i])<<16) * xv)
		a4 += float32(math.Float32frombits(uint32(w4[i])<<16) * xv)
		a5 += float32(math.Float32frombits(uint32(w5[i])<<16) * xv)
		a6 += float32(math.Float32frombits(uint32(w6[i])<<16) * xv)
		a7 += float32(math.Float32frombits(uint32(w7[i])<<16) * xv)
	}
	y[0], y[1], y[2], y[3], y[4], y[5], y[6], y[7] = a0, a1, a2, a3, a4, a5, a6, a7
}

func dotSeqBF(w []uint16, x []float32) float32 {
	w = w[:len(x)]
	var a float32
	for i, xv := range x {
		a += float32(math.Float32frombits(uint32(w[i])<<16) * xv)
	}
	return a
}

// dotSeq is one row summed in the same order as a lane of dot8.
func dotSeq(w, x []float32) float32 {
	w = w[:len(x)]
	var a float32
	for i, xv := range x {
		a += float32(w[i] * xv)
	}
	return a
}

// useSIMD selects the vector kernels (kernels_simd.go) where the build and
// the CPU have them; both paths give the same bits.
var useSIMD = simdOK

// bf16 widens a bfloat16 exactly to float32.
func bf16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// matRows computes y[b][j] = W[j]·x[b] (+ y[b][j] when accumulate) for rows
// j in [lo, hi) and every batch vector b.
func matRows(w mat, xs, ys [][]float32, lo, hi int, accumulate bool) {
	if !matRowsVec(w, xs, ys, lo, hi, accumulate) {
		matRowsScalar(w, xs, ys, lo, hi, accumulate)
	}
}

// matRowsScalar is matRows in plain Go. The row block stays in L1 while it
// meets every vector of the batch.
func matRowsScalar(w mat, xs, ys [][]float32, lo, hi int, accumulate bool) {
	var tmp [8]float32
	j := lo
	for ; j+8 <= hi; j += 8 {
		for b, x := range xs {
			y := ys[b][j : j+8 : j+8]
			out := y
			if accumulate {
				out = tmp[:]
			}
			if w.bf != nil {
				dot8bf(w.bf[j*w.cols:], w.cols, x, out)
			} else {
				dot8(w.data[j*w.cols:], w.cols, x, out)
			}
			if accumulate {
				for i, v := range tmp {
					y[i] += v
				}
			}
		}
	}
	for ; j < hi; j++ {
		for b, x := range xs {
			var v float32
			if w.bf != nil {
				v = dotSeqBF(w.bf[j*w.cols:(j+1)*w.cols], x)
			} else {
				v = dotSeq(w.row(j), x)
			}
			if accumulate {
				ys[b][j] += v
			} else {
				ys[b][j] = v
			}
		}
	}
}

// parallelMinWork is the number of multiply-adds below which a matrix
// product runs on the calling goroutine: under it, waking another core costs
// more than it saves.
const parallelMinWork = 1 << 16

// matMul computes ys[b] = W·xs[b] for every b (or adds it when accumulate),
// splitting rows across goroutines when the product is large enough.
func matMul(w mat, xs, ys [][]float32, accumulate bool) {
	work := w.rows * w.cols * len(xs)
	workers := runtime.GOMAXPROCS(0)
	if work < parallelMinWork || workers == 1 || w.rows < 16 {
		matRows(w, xs, ys, 0, w.rows, accumulate)
		return
	}
	if maxW := work / parallelMinWork; workers > maxW {
		workers = maxW
	}
	chunk := (w.rows + workers - 1) / workers
	chunk = (chunk + 15) &^ 15 // whole 16-row panels for the vector kernels
	var wg sync.WaitGroup
	for lo := chunk; lo < w.rows; lo += chunk {
		hi := min(lo+chunk, w.rows)
		wg.Add(1)
		go func() {
			defer wg.Done()
			matRows(w, xs, ys, lo, hi, accumulate)
		}()
	}
	matRows(w, xs, ys, 0, min(chunk, w.rows), accumulate)
	wg.Wait()
}

// axpy adds a·x to y.
func axpy(y []float32, a float32, x []float32) {
	if axpyVec(y, a, x) {
		return
	}
	x = x[:len(y)]
	for i := range y {
		y[i] += float32(a * x[i])
	}
}

// matVecReference is the plain loop the benchmarks compare the kernel with.
func matVecReference(w mat, x, y []float32) {
	for j := 0; j < w.rows; j++ {
		var s float32
		for i := 0; i < w.cols; i++ {
			s += w.data[j*w.cols+i] * x[i]
		}
		y[j] = s
	}
}

// logSumExp returns log Σ exp(logits·invTemp), computed in float64 (the
// sum in ascending index order).
func logSumExp(logits []float32, invTemp float64) float64 {
	m := math.Inf(-1)
	for _, v := range logits {
		if f := float64(v) * invTemp; f > m {
			m = f
		}
	}
	return m + math.Log(expScaledSum(logits, invTemp, m))
}
