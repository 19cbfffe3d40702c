package engine

import (
	"math"
	"runtime"
)

// Kernels of the backward pass. Like the forward kernels, every output
// element is summed in one fixed order (ascending over the reduced index),
// whatever the tiling or the goroutine split, each term one fused
// multiply-add (fma32) as in the vector tiles: gradients have the same bits
// on every run, batch split and machine.

// parallelFor splits [0, n) into at most GOMAXPROCS ranges whose bounds are
// multiples of align and runs fn on each (forkJoin). work is the total multiply-adds, which decides whether waking
// other cores is worth it. Each range must write disjoint outputs.
func parallelFor(n, align int, work int, fn func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if maxW := work / parallelMinWork; workers > maxW {
		workers = maxW
	}
	if workers <= 1 || n <= align {
		fn(0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	chunk = (chunk + align - 1) / align * align
	forkJoin((n+chunk-1)/chunk, func(i int) { fn(i*chunk, min((i+1)*chunk, n)) })
}

// parallelPieces runs fn over [0, n) in pieces of chunk (the last may be
// shorter) that the cores take in turn (forkJoin), so that a core given
// less CPU time does fewer of them; below the work that pays for waking
// another core (work multiply-adds), or on one core, fn(0, n) runs alone.
// Each piece must write disjoint outputs.
func parallelPieces(n, chunk, work int, fn func(lo, hi int)) {
	if runtime.GOMAXPROCS(0) == 1 || work < 2*parallelMinWork || n <= chunk {
		fn(0, n)
		return
	}
	forkJoin((n+chunk-1)/chunk, func(i int) { fn(i*chunk, min((i+1)*chunk, n)) })
}

// Tiles of matMulT: a block of tRows weight rows by tCols columns (128 KiB
// of float32, in L2) is reused for every vector of the batch while it is in
// cache; 128 rows rather than 64 halve the vector kernels' loads and stores
// of their accumulators (measured +15% at M = 128).
const (
	tRows = 128
	tCols = 256
)

// matMulT computes xs[b] = Wᵀ·ys[b] (or adds it when accumulate):
// xs[b][i] = Σ_j ys[b][j]·W[j][i], summed in ascending j. This is the
// gradient of a linear layer with respect to its input. Columns are split
// across goroutines.
func matMulT(w mat, ys, xs [][]float32, accumulate bool) {
	if len(ys) == 0 {
		return
	}
	if w.vn != nil {
		matMulTBF16(w, ys, xs, accumulate)
		return
	}
	if terms := []tTerm{{w: w, ys: ys, zero: !accumulate}}; (asmBwd() && matMulTAsm(terms, xs)) || (avx2Bwd() && matMulTAVX2(terms, xs)) {
		return
	}
	if !accumulate {
		for _, x := range xs[:len(ys)] {
			clear(x[:w.cols])
		}
	}
	work := w.rows * w.cols * len(ys)
	if w.cols <= tCols {
		// Too narrow to split by columns (a LoRA B of rank r): split the
		// batch instead, which leaves each element's sum unchanged too.
		parallelFor(len(ys), 1, work, func(lo, hi int) {
			var wide []float32
			if w.bf != nil {
				wide = make([]float32, 4*tCols)
			}
			for j0 := 0; j0 < w.rows; j0 += tRows {
				matTBlock(w, ys[lo:hi], xs[lo:hi], j0, min(j0+tRows, w.rows), 0, w.cols, wide)
			}
		})
		return
	}
	parallelPieces(w.cols, tCols, work, func(lo, hi int) {
		var wide []float32
		if w.bf != nil {
			wide = make([]float32, 4*tCols)
		}
		for c0 := lo; c0 < hi; c0 += tCols {
			c1 := min(c0+tCols, hi)
			for j0 := 0; j0 < w.rows; j0 += tRows {
				matTBlock(w, ys, xs, j0, min(j0+tRows, w.rows), c0, c1, wide)
			}
		}
	})
}

// matMulTLoRA computes xs[b] = Wᵀ·ys[b] + Aᵀ·ts[b] (or adds it when
// accumulate): the gradient of a LoRA layer's input through its base
// matrix W and its A, given the gradients ys of the outputs and ts of A's
// outputs. The assembly tiles of W's last block of rows go on to A's rows
// before storing their part of xs (tMulFold), where matMulT through W and
// then through A passed over all of xs twice. Each element
// is summed as the two calls sum it (W's rows ascending, then A's,
// continuing the same chain of fused multiply-adds), so the bits are the
// same on every path.
func matMulTLoRA(w mat, ys [][]float32, a mat, ts, xs [][]float32, accumulate bool) {
	if len(ys) == 0 {
		return
	}
	if w.vn == nil && a.vn == nil {
		terms := []tTerm{{w: w, ys: ys, zero: !accumulate}, {w: a, ys: ts}}
		if (asmBwd() && matMulTAsm(terms, xs)) || (avx2Bwd() && matMulTAVX2(terms, xs)) {
			return
		}
	}
	matMulT(w, ys, xs, accumulate)
	matMulT(a, ts, xs, true)
}

// matTBlock adds rows [j0, j1) of W restricted to columns [c0, c1) into
// every xs[b], four rows per pass; the additions are written left to right,
// so the result equals adding the rows one by one.
func matTBlock(w mat, ys, xs [][]float32, j0, j1, c0, c1 int, wide []float32) {
	if !matTBlockVec(w, ys, xs, j0, j1, c0, c1) {
		matTBlockScalar(w, ys, xs, j0, j1, c0, c1, wide)
	}
}

// matTBlockScalar is matTBlock in plain Go; wide (4·tCols floats) holds
// widened bfloat16 rows, or is allocated here when nil.
func matTBlockScalar(w mat, ys, xs [][]float32, j0, j1, c0, c1 int, wide []float32) {
	if w.bf != nil && wide == nil {
		wide = make([]float32, 4*tCols)
	}
	n := c1 - c0
	row := func(j, slot int) []float32 {
		if w.bf == nil {
			return w.data[j*w.cols+c0 : j*w.cols+c1 : j*w.cols+c1]
		}
		dst := wide[slot*tCols : slot*tCols+n : slot*tCols+n]
		for i, h := range w.bf[j*w.cols+c0 : j*w.cols+c1] {
			dst[i] = math.Float32frombits(uint32(h) << 16)
		}
		return dst
	}
	j := j0
	for ; j+4 <= j1; j += 4 {
		w0, w1, w2, w3 := row(j, 0), row(j+1, 1), row(j+2, 2), row(j+3, 3)
		for b, y := range ys {
			a0, a1, a2, a3 := y[j], y[j+1], y[j+2], y[j+3]
			x := xs[b][c0:c1:c1]
			w0, w1, w2, w3 := w0[:len(x)], w1[:len(x)], w2[:len(x)], w3[:len(x)]
			for i, xv := range x {
				x[i] = fma32(a3, w3[i], fma32(a2, w2[i], fma32(a1, w1[i], fma32(a0, w0[i], xv))))
			}
		}
	}
	for ; j < j1; j++ {
		w0 := row(j, 0)
		for b, y := range ys {
			axpyFMA(xs[b][c0:c1], y[j], w0)
		}
	}
}

// outerAcc adds Σ_b us[b] ⊗ vs[b] to dst ([len(us[0]) rows, len(vs[0])
// cols], row-major): dst[o][k] += Σ_b us[b][o]·vs[b][k], summed in
// ascending b. This is the gradient of a matrix from its layer's output
// gradients (us) and inputs (vs). Rows are split across goroutines.
func outerAcc(dst []float32, rows, cols int, us, vs [][]float32) {
	if (asmBwd() && outerAsm(dst, rows, cols, us, vs)) || (avx2Bwd() && outerAVX2(dst, rows, cols, us, vs)) {
		return
	}
	parallelFor(rows, 8, rows*cols*len(us), func(lo, hi int) {
		if !outerRowsVec(dst, cols, us, vs, lo, hi) {
			outerRowsScalar(dst, cols, us, vs, lo, hi)
		}
	})
}

// outerAccShared is outerAcc(dsts[i], rows, cols, uss[i], vs) for each i:
// the gradients of matrices that read the same inputs vs (the LoRA A's of
// q, k and v, or of gate and up). The assembly tiles pack each strip of
// vs once for all of them (outerAsmShared, outer2Shared); every
// element's sum is outerAcc's.
func outerAccShared(dsts [][]float32, rows, cols int, uss [][][]float32, vs [][]float32) {
	if len(dsts) > 1 && ((asmBwd() && outerAsmShared(dsts, rows, cols, uss, vs)) || (avx2Bwd() && outer2Shared(dsts, rows, cols, uss, vs))) {
		return
	}
	for i, d := range dsts {
		outerAcc(d, rows, cols, uss[i], vs)
	}
}

// outerRowsScalar is outerAcc's work on rows [lo, hi) in plain Go.
func outerRowsScalar(dst []float32, cols int, us, vs [][]float32, lo, hi int) {
	for o0 := lo; o0 < hi; o0 += tRows {
		o1 := min(o0+tRows, hi)
		b := 0
		// Four vectors per pass, added left to right: the same bits as
		// one at a time, with a quarter of the loads and stores of dst.
		for ; b+4 <= len(us); b += 4 {
			u0, u1, u2, u3 := us[b], us[b+1], us[b+2], us[b+3]
			v0, v1, v2, v3 := vs[b][:cols:cols], vs[b+1][:cols:cols], vs[b+2][:cols:cols], vs[b+3][:cols:cols]
			for o := o0; o < o1; o++ {
				a0, a1, a2, a3 := u0[o], u1[o], u2[o], u3[o]
				d := dst[o*cols : (o+1)*cols : (o+1)*cols]
				for k, dv := range d {
					d[k] = fma32(a3, v3[k], fma32(a2, v2[k], fma32(a1, v1[k], fma32(a0, v0[k], dv))))
				}
			}
		}
		for ; b < len(us); b++ {
			v := vs[b][:cols:cols]
			for o := o0; o < o1; o++ {
				axpyFMA(dst[o*cols:(o+1)*cols], us[b][o], v)
			}
		}
	}
}
