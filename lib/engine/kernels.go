package engine

import (
	"math"
	"runtime"
	"sync"
)

// Numeric kernels. Every output element is computed by exactly one call of
// dot4 or dot1 with a fixed accumulation order, whatever the batch size or
// the number of goroutines: results are bit-identical between a request run
// alone and the same request batched with others (batch invariance), which
// keeps seeded sampling reproducible under load.
//
// The products are written float32(a*b) so the compiler never fuses them into
// FMA instructions (it may on arm64 or GOAMD64=v3): the same binary inputs
// give the same bits on every machine.

// mat is a row-major [rows, cols] float32 matrix (PyTorch Linear layout:
// rows = output features, cols = input features).
type mat struct {
	rows, cols int
	data       []float32
}

func (m mat) row(i int) []float32 { return m.data[i*m.cols : (i+1)*m.cols : (i+1)*m.cols] }

// dot1 is the single-row kernel: 8 independent accumulators hide the
// floating-point add latency.
func dot1(w, x []float32) float32 {
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

// dot4 computes four rows against one vector. Sharing each load of x across
// four rows cuts memory traffic per multiply-add from 2 loads to 1.25, and
// the 8 accumulators (2 per row) hide the add latency. Every output row is
// computed in this order (dotTail repeats it for leftover rows).
func dot4(w0, w1, w2, w3, x []float32) (float32, float32, float32, float32) {
	n := len(x)
	w0, w1, w2, w3 = w0[:n], w1[:n], w2[:n], w3[:n]
	var a0, a1, b0, b1, c0, c1, d0, d1 float32
	for len(x) >= 4 {
		xx, p, q, r, s := x[:4:4], w0[:4:4], w1[:4:4], w2[:4:4], w3[:4:4]
		a0 += float32(p[0] * xx[0])
		a1 += float32(p[1] * xx[1])
		b0 += float32(q[0] * xx[0])
		b1 += float32(q[1] * xx[1])
		c0 += float32(r[0] * xx[0])
		c1 += float32(r[1] * xx[1])
		d0 += float32(s[0] * xx[0])
		d1 += float32(s[1] * xx[1])
		a0 += float32(p[2] * xx[2])
		a1 += float32(p[3] * xx[3])
		b0 += float32(q[2] * xx[2])
		b1 += float32(q[3] * xx[3])
		c0 += float32(r[2] * xx[2])
		c1 += float32(r[3] * xx[3])
		d0 += float32(s[2] * xx[2])
		d1 += float32(s[3] * xx[3])
		x, w0, w1, w2, w3 = x[4:], w0[4:], w1[4:], w2[4:], w3[4:]
	}
	for i := range x {
		a0 += float32(w0[i] * x[i])
		b0 += float32(w1[i] * x[i])
		c0 += float32(w2[i] * x[i])
		d0 += float32(w3[i] * x[i])
	}
	return a0 + a1, b0 + b1, c0 + c1, d0 + d1
}

// dotTail computes one row with the same accumulation order as one lane of
// dot4, for the rows left over when rows%4 != 0. Using it (rather than dot1)
// means each output element's bits depend only on its row index modulo
// nothing: every row is computed in the dot4 order.
func dotTail(w, x []float32) float32 {
	w = w[:len(x)]
	var a0, a1 float32
	for len(x) >= 4 {
		xx, p := x[:4:4], w[:4:4]
		a0 += float32(p[0] * xx[0])
		a1 += float32(p[1] * xx[1])
		a0 += float32(p[2] * xx[2])
		a1 += float32(p[3] * xx[3])
		x, w = x[4:], w[4:]
	}
	for i := range x {
		a0 += float32(w[i] * x[i])
	}
	return a0 + a1
}

// matRows computes y[b][j] = W[j]·x[b] (+ y[b][j] when accumulate) for rows
// j in [lo, hi) and every batch vector b.
func matRows(w mat, xs, ys [][]float32, lo, hi int, accumulate bool) {
	j := lo
	for ; j+4 <= hi; j += 4 {
		r0, r1, r2, r3 := w.row(j), w.row(j+1), w.row(j+2), w.row(j+3)
		for b, x := range xs {
			v0, v1, v2, v3 := dot4(r0, r1, r2, r3, x)
			y := ys[b][j : j+4 : j+4]
			if accumulate {
				y[0] += v0
				y[1] += v1
				y[2] += v2
				y[3] += v3
			} else {
				y[0], y[1], y[2], y[3] = v0, v1, v2, v3
			}
		}
	}
	for ; j < hi; j++ {
		r := w.row(j)
		for b, x := range xs {
			v := dotTail(r, x)
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
// splitting rows across goroutines when the product is large enough. Rows are
// split on multiples of 4 so every row keeps the same kernel, hence the same
// bits, whatever the split.
func matMul(w mat, xs, ys [][]float32, accumulate bool) {
	work := w.rows * w.cols * len(xs)
	workers := runtime.GOMAXPROCS(0)
	if work < parallelMinWork || workers == 1 || w.rows < 8 {
		matRows(w, xs, ys, 0, w.rows, accumulate)
		return
	}
	if maxW := work / parallelMinWork; workers > maxW {
		workers = maxW
	}
	chunk := (w.rows + workers - 1) / workers
	chunk = (chunk + 3) &^ 3
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

// rmsNorm writes x / rms(x) * weight into out (out may alias x). The sum of
// squares is taken in float64 so it does not depend on accumulation order
// subtleties for wide rows.
func rmsNorm(out, x, weight []float32, eps float64) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	scale := float32(1 / math.Sqrt(ss/float64(len(x))+eps))
	weight = weight[:len(x)]
	out = out[:len(x)]
	for i, v := range x {
		out[i] = float32(v*scale) * weight[i]
	}
}

// silu is x·sigmoid(x).
func silu(x float32) float32 {
	return float32(float64(x) / (1 + math.Exp(-float64(x))))
}

// logSoftmaxAt returns log softmax(logits/temperature)[tok] computed in
// float64, together with the log-sum-exp so callers can reuse it.
func logSumExp(logits []float32, invTemp float64) float64 {
	m := math.Inf(-1)
	for _, v := range logits {
		if f := float64(v) * invTemp; f > m {
			m = f
		}
	}
	var s float64
	for _, v := range logits {
		s += math.Exp(float64(v)*invTemp - m)
	}
	return m + math.Log(s)
}
