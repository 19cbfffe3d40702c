package engine

import (
	"runtime"
	"unsafe"
)

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
	if fwdAVX2 || w.vn != nil || b.rows != w.rows || len(ts) != len(xs) || len(xs) < fwdColsMinTokens || fwdColsKernel(b) == nil {
		return false
	}
	step := fwdPack{}.tokenStep(w.cols, len(xs))
	if rest := len(xs) % step; step < fwdColsMinTokens || rest != 0 && rest < fwdColsMinTokens {
		return false
	}
	p, ok := packForward(w, xs)
	if !ok {
		return false
	}
	defer p.release()
	var tp []float32
	if foldInTiles(w, b) {
		tpp := xpackPool.Get().(*[]float32)
		defer xpackPool.Put(tpp)
		tp = packTokens(ts, b.cols, tpp, false)
	}
	workers := min(runtime.GOMAXPROCS(0), max(1, w.rows*w.cols*len(xs)/parallelMinWork))
	for t0 := 0; t0 < len(xs); t0 += step {
		t1 := min(t0+step, len(xs))
		q, xq, tq, yq := p.tokens(w.cols, t0), xs[t0:t1], ts[t0:t1], ys[t0:t1]
		var tpq []float32
		if tp != nil {
			tpq = tp[t0/4*packedLen(b.cols):]
		}
		piece := func(lo, hi int) { q.foldRows(w, xq, yq, b, tq, tpq, lo, hi, accumulate) }
		if workers == 1 {
			piece(0, w.rows)
			continue
		}
		forkRows(w.rows, 6, workers, piece)
	}
	return true
}

// foldRows computes rows [lo, hi) of W·x (written or added) + B·t for the
// packed batch (tp: ts packed, nil when the tiles do not take B), a run
// of rows at a time (fwdFoldBytes; a multiple of 48 rows, so of the
// tiles' 6 and fwdCols's 16, the last run taking what is left rather
// than fewer than 48 rows).
func (p fwdPack) foldRows(w mat, xs, ys [][]float32, b mat, ts [][]float32, tp []float32, lo, hi int, accumulate bool) {
	if tp != nil && hi-lo >= 6 {
		m4 := len(xs) &^ 3
		fwdTilesL1Fold(w, p.xp, ys[:m4], b, tp, lo, hi, accumulate)
		if m4 < len(xs) { // the one to three vectors past the groups
			j := fwdRows(w, xs[m4:], ys[m4:], lo, hi, accumulate)
			fwdRowTail(w, p.xp[m4/4*packedLen(w.cols):], ys[m4:], j, hi, accumulate)
			matRows(b, ts[m4:], ys[m4:], lo, hi, true)
		}
		return
	}
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

// fwdLoRATile is the 4×6 tile kernel that goes on into a LoRA B of k
// columns (fwdTile4x6GL<k>F32), or nil.
func fwdLoRATile(k int) func(xp, w *float32, stride, n, groups int, ys *[]float32, col, mask, add int, pf *byte, pfEnd uintptr, pfStep int, bt, bw *float32) {
	switch k {
	case 16:
		return fwdTile4x6GL16F32
	case 32:
		return fwdTile4x6GL32F32
	case 48:
		return fwdTile4x6GL48F32
	case 64:
		return fwdTile4x6GL64F32
	}
	return nil
}

// foldInTiles reports whether the tiles take B's product with W's: whole
// float32 rows of W (no pieces) and a B fwdLoRATile has a kernel for.
func foldInTiles(w, b mat) bool {
	return w.bf == nil && w.cols <= fwdKC && b.bf == nil && b.vn == nil && fwdLoRATile(b.cols) != nil
}

// fwdTilesL1Fold is fwdTilesL1 (rows [lo, hi), six or more, whole groups)
// whose tiles also add B's products (B·t, t packed in tp) into each
// group's rows before they store them (fwdTile4x6GL): the bits of
// fwdTilesL1 followed by B's product adding, with neither the second
// pass over the rows nor B's own lane trees over them.
func fwdTilesL1Fold(w mat, xp []float32, ys [][]float32, b mat, tp []float32, lo, hi int, accumulate bool) {
	n, k, pl, bl := w.cols, b.cols, packedLen(w.cols), packedLen(b.cols)
	groups := len(ys) / 4
	if groups == 0 {
		return
	}
	gb := min(groups, max(1, fwdL1TokBytes/(4*pl)))
	for _, y := range ys {
		_ = y[hi-1] // the kernels write columns [lo, hi) of every row
	}
	_, _, _ = xp[groups*pl-1], tp[groups*bl-1], b.data[hi*k-1]
	kern, add := fwdLoRATile(k), 0
	if accumulate {
		add = 1
	}
	for g0 := 0; g0 < groups; g0 += gb {
		g1 := min(g0+gb, groups)
		for j := lo; j < hi; j += 6 {
			t := min(j, hi-6)
			mask := 0x3f << (j - t) & 0x3f // the rows the tile before left
			next := w.nextTile(t, lo, hi) * n
			_ = w.data[next+6*n-1]
			pf := unsafe.Pointer(&w.data[next])
			end := uintptr(pf) + uintptr(24*n)
			ps := fwdPrefetchStep(24*n, (g1-g0)*((n+15)/16))
			kern(&xp[g0*pl], &w.data[t*n], n, n, g1-g0, &ys[4*g0], t, mask, add, (*byte)(pf), end, ps, &tp[g0*bl], &b.data[t*k])
		}
	}
}
