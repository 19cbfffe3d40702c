package engine

import (
	"sync"
	"unsafe"
)

// fwdKBlock selects fwdTilesKBlocked for rows longer than fwdKC (a
// variable so a benchmark can pair it with the tile-by-tile order).
var fwdKBlock = true

// fwdKBlockAccBytes bounds the accumulators fwdTilesKBlocked keeps between
// pieces: a block of tiles × its groups × 1.5 KiB.
var fwdKBlockAccBytes = 384 << 10

// fwdKBlockTokBytes bounds a block of groups' pieces in fwdTilesKBlocked.
var fwdKBlockTokBytes = 768 << 10

// fwdKBlockPool holds fwdTilesKBlocked's accumulators.
var fwdKBlockPool = sync.Pool{New: func() any { return new([]float32) }}

// fwdSliceCols is the columns of a packed vector that a slice of the
// batch (fwdSliceBytes) and a block of groups (fwdL1TokBytes) are sized
// by: the piece fwdTilesKBlocked keeps in L2 at a time, else all n.
func fwdSliceCols(n int) int {
	if fwdKBlock && n > fwdKC {
		return fwdKC
	}
	return n
}

// fwdTilesKBlocked is fwdTilesL1Then for rows longer than fwdKC in
// pieces taken across a block of tiles: for each piece, every tile of the
// block meets every group of a block of groups before the next piece
// starts, each tile's accumulators kept between pieces. Tile by tile
// (fwdTile6Groups), all pieces of a block of groups had to fit L2 at
// once, so at K = 3072 a weight tile met 16 groups; here a piece of each
// group does, so it meets 48, and a piece of the weights is read from L2
// a third as often. Each piece of every output still adds its lanes in
// ascending k, so the bits are those of the tile-by-tile order. During a
// block's pieces its tiles prefetch the next block's rows (whole, a
// share each) into L2, spread over all its pieces' calls.
func fwdTilesKBlocked(w mat, xp []float32, ys [][]float32, lo, hi int, accumulate bool, after int) {
	n, pl, groups := w.cols, packedLen(w.cols), len(ys)/4
	if groups == 0 {
		return
	}
	gb := min(groups, max(1, fwdKBlockTokBytes/(4*packedLen(fwdKC))))
	tiles := (hi - lo + 5) / 6
	rb := max(1, min(tiles, fwdKBlockAccBytes/(gb*384*4)))
	op := fwdKBlockPool.Get().(*[]float32)
	defer fwdKBlockPool.Put(op)
	*op = growTo(*op, 384*gb*rb)
	add := 0
	if accumulate {
		add = 1
	}
	tileAt := func(i int) int { return min(lo+6*i, hi-6) }
	for g0 := 0; g0 < groups; g0 += gb {
		g1 := min(g0+gb, groups)
		for b0 := 0; b0 < tiles; b0 += rb {
			b1 := min(b0+rb, tiles)
			// The rows the next block reads: the next tiles, the first
			// block again for the next groups, or after at the end.
			nr0, nr1 := tileAt(b1), tileAt(min(b1+rb, tiles)-1)+6
			switch {
			case b1 == tiles && g1 < groups:
				nr0, nr1 = tileAt(0), tileAt(min(rb, tiles)-1)+6
			case b1 == tiles:
				nr0 = min(after, w.rows-6)
				nr1 = nr0 + 6
			}
			for p0 := 0; p0 < n; p0 += fwdKC {
				mode := 0
				if p0 > 0 {
					mode |= 1
				}
				last := p0+fwdKC >= n
				if last {
					mode |= 2
				}
				for i := b0; i < b1; i++ {
					j := lo + 6*i
					t := tileAt(i)
					mask := 0x3f << (j - t) & 0x3f
					pieces := (n + fwdKC - 1) / fwdKC
					pf, end := w.shareOf(nr0, nr1, p0/fwdKC*(b1-b0)+i-b0, pieces*(b1-b0))
					acc := (*op)[(i-b0)*384*gb:]
					fwdPiece(w, xp[g0*pl:g1*pl], t, p0, ys[4*g0:4*g1], mask, add, mode, pf, end, acc)
				}
			}
		}
	}
}

// rowsAt is the address of element col of row r of m.
func (m mat) rowsAt(r, col int) unsafe.Pointer {
	i := r*m.cols + col
	if m.bf != nil {
		return unsafe.Pointer(&m.bf[i])
	}
	return unsafe.Pointer(&m.data[i])
}

// shareOf is share i of s (a whole number of lines each) of the bytes of
// rows [r0, r1) of m, as the start and end of a kernel's prefetch.
func (m mat) shareOf(r0, r1, i, s int) (unsafe.Pointer, uintptr) {
	bytes := (r1 - r0) * m.cols * m.elemSize()
	share := (bytes/s + 63) &^ 63
	base := m.rowsAt(r0, 0)
	off := min(i*share, bytes)
	return unsafe.Add(base, off), uintptr(base) + uintptr(min(off+share, bytes))
}

// fwdPiece runs fwdTile4x6KG on columns [p0, p0+fwdKC) of rows [j, j+6)
// and the groups packed in g (whole rows each), with each group's
// accumulators in acc (384 floats a group) and mode as the kernel takes
// it; it prefetches [pf, end) into L2, spread over its steps.
func fwdPiece(w mat, g []float32, j, p0 int, ys [][]float32, mask, add, mode int, pf unsafe.Pointer, end uintptr, acc []float32) {
	n, pl, groups := w.cols, packedLen(w.cols), len(ys)/4
	pn := min(fwdKC, n-p0)
	_, _ = g[groups*pl-1], acc[384*groups-1]
	ps := fwdPrefetchStep(int(end-uintptr(pf)), groups*((pn+15)/16))
	if w.bf != nil {
		_ = w.bf[(j+6)*n-1]
		fwdTile4x6KGBF16(&g[4*p0], &w.bf[j*n+p0], n, pn, groups, &ys[0], j, mask, add, (*byte)(pf), end, ps, &acc[0], mode, 4*pl)
		return
	}
	_ = w.data[(j+6)*n-1]
	fwdTile4x6KGF32(&g[4*p0], &w.data[j*n+p0], n, pn, groups, &ys[0], j, mask, add, (*byte)(pf), end, ps, &acc[0], mode, 4*pl)
}
