package engine

import "sync"

// fwdColsKernel is the fwdCols kernel (gemm_fwd_amd64.s) for w's rows, or
// nil: it takes float32 rows of 16, 32, 48 or 64 columns (a LoRA B, its
// rank wide), where the 4×6 tiles spent more on their lane trees and
// stores than on the products. Paired on one thread at M = 512 (a loaded
// machine), fwdCols took 0.42-0.61 of the tiles' time at 16 and 32
// columns, 0.61-0.70 at 48 and 64, and 1.0-1.2 at 128 and 256 (where it
// is not used: its loads, a panel vector and a broadcast per two
// products, bound it there).
func fwdColsKernel(w mat) func(p *float32, xs, ys *[]float32, tokens, col, mask, add int) {
	if w.bf != nil || w.vn != nil {
		return nil
	}
	switch w.cols {
	case 16:
		return fwdCols16F32
	case 32:
		return fwdCols32F32
	case 48:
		return fwdCols48F32
	case 64:
		return fwdCols64F32
	}
	return nil
}

// fwdColsMinTokens is the smallest batch fwdColsRows takes: each call
// transposes its rows into panels, which a small batch does not pay for
// (paired on one thread: 1.15-1.9 of the tiles' time at 16-32 vectors,
// 0.87-0.93 at 64, 0.60-0.76 at 128 on 1024-151936 rows of 32).
var fwdColsMinTokens = 128

// fwdColsPool holds fwdColsRows's panels.
var fwdColsPool = sync.Pool{New: func() any { return new([]float32) }}

// fwdColsRows computes rows [lo, hi) for every vector with fwdCols, 16
// rows at a time, each block's panel (its rows transposed, p[16k+i] =
// w[lo+16b+i][k], zero past hi) made here; it reports false, doing
// nothing, when no fwdCols kernel takes w.
func fwdColsRows(w mat, xs, ys [][]float32, lo, hi int, accumulate bool) bool {
	kern := fwdColsKernel(w)
	if kern == nil || len(xs) < fwdColsMinTokens || lo >= hi {
		return false
	}
	k := w.cols
	for b, x := range xs {
		_, _ = x[k-1], ys[b][hi-1] // the kernel reads k columns and writes up to hi
	}
	_ = w.data[hi*k-1]
	pp := fwdColsPool.Get().(*[]float32)
	defer fwdColsPool.Put(pp)
	*pp = growTo(*pp, 16*k)
	panel := (*pp)[:16*k]
	add := 0
	if accumulate {
		add = 1
	}
	for o := lo; o < hi; o += 16 {
		rows := min(16, hi-o)
		if rows < 16 {
			clear(panel)
		}
		for i := range rows {
			for c, v := range w.data[(o+i)*k : (o+i+1)*k] {
				panel[16*c+i] = v
			}
		}
		kern(&panel[0], &xs[0], &ys[0], len(xs), o, 1<<rows-1, add)
	}
	return true
}
