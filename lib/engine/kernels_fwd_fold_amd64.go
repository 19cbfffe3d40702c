package engine

import "runtime"

// fwdFoldBytes bounds the outputs (float32, every vector of a slice) of
// the rows matMulFoldAsm runs through W's tiles before it adds B's
// products into them: they are still in L2 (2 MiB a core here, beside
// the slice of packed vectors) when fwdCols reads and writes them again.
var fwdFoldBytes = 256 << 10

// matMulFoldAsm is matMulFold on the AVX-512 path when B is a fwdCols
// product (float32, 16-64 columns): matMul's slices and row pieces, each
// piece in runs of rows of at most fwdFoldBytes of outputs, W's tiles
// then B's fwdCols over the same run. Every output element gets the
// same kernels' sums in the same order as two matMul calls, so the same
// bits. It reports false, doing nothing, when B is not such a product or
// a slice of the batch is too small for fwdCols (fwdColsMinTokens): B's
// own matMul would use it on the whole batch.
func matMulFoldAsm(w mat, xs, ys [][]float32, b mat, ts [][]float32, accumulate bool) bool {
	if !foldTakes(w, xs, b, ts) {
		return false
	}
	p, ok := packForward(w, xs)
	if !ok {
		return false
	}
	defer p.release()
	foldSlices(p, w, xs, ys, b, ts, accumulate)
	return true
}

// matMulFoldOn is matMulFold on xs already packed for w (matMulOn).
func matMulFoldOn(p fwdPack, w mat, xs, ys [][]float32, b mat, ts [][]float32, accumulate bool) {
	if lanesFoldOn(p, w, xs, ys, b, ts, accumulate) {
		return
	}
	if !foldTakes(w, xs, b, ts) {
		matMulOn(p, w, xs, ys, accumulate)
		matMul(b, ts, ys, true)
		return
	}
	foldSlices(p, w, xs, ys, b, ts, accumulate)
}

// foldTakes reports whether matMulFoldAsm takes the product: B a fwdCols
// product of W's rows and every slice of the batch large enough for it.
func foldTakes(w mat, xs [][]float32, b mat, ts [][]float32) bool {
	if fwdAVX2 || w.vn != nil || b.rows != w.rows || len(ts) != len(xs) || len(xs) < fwdColsMinTokens || fwdColsKernel(b) == nil {
		return false
	}
	s := fwdPack{}.tokenSlices(w.cols, len(xs))
	for i := range s {
		if t0, t1 := sliceOf(len(xs), s, i); t1-t0 < fwdColsMinTokens {
			return false
		}
	}
	return true
}

// foldSlices is matMulFoldAsm's work on the packed batch p.
func foldSlices(p fwdPack, w mat, xs, ys [][]float32, b mat, ts [][]float32, accumulate bool) {
	s := p.tokenSlices(w.cols, len(xs))
	workers := min(runtime.GOMAXPROCS(0), max(1, w.rows*w.cols*len(xs)/parallelMinWork))
	for i := range s {
		t0, t1 := sliceOf(len(xs), s, i)
		q, xq, tq, yq := p.tokens(w.cols, t0), xs[t0:t1], ts[t0:t1], ys[t0:t1]
		piece := func(lo, hi int) { q.foldRows(w, xq, yq, b, tq, lo, hi, accumulate) }
		if workers == 1 {
			piece(0, w.rows)
			continue
		}
		forkRows(w.rows, 6, workers, piece)
	}
}

// foldRows computes rows [lo, hi) of W·x (written or added) + B·t for the
// packed batch, a run of rows at a time (fwdFoldBytes; a multiple of 48
// rows, so of the tiles' 6 and fwdCols's 16, the last run taking what is
// left rather than fewer than 48 rows).
func (p fwdPack) foldRows(w mat, xs, ys [][]float32, b mat, ts [][]float32, lo, hi int, accumulate bool) {
	run := max(48, fwdFoldBytes/(4*len(xs))/48*48)
	for r0 := lo; r0 < hi; {
		r1 := min(r0+run, hi)
		if hi-r1 < 48 {
			r1 = hi
		}
		after := r0 // as rows: nothing follows in this piece
		if r1 < hi {
			after = r1
		}
		p.rowsThen(w, xs, ys, r0, r1, accumulate, after)
		fwdColsRows(b, ts, ys, r0, r1, true) // matMulFoldAsm checked it takes them
		r0 = r1
	}
}
