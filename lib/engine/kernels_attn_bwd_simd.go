//go:build goexperiment.simd && amd64

package engine

import (
	"simd/archsimd"
	"unsafe"
)

// attnScatterBlockVec does attnScatterBlock for the heads' leading
// multiple of 8 and returns how many elements it did. Keys go two at a
// time (weightedPair: each packed head vector loaded once for both, 16
// elements of both gradients held in registers across the block's
// queries).
func attnScatterBlockVec(outs [][]float32, off int, w, rows []float32, nq, group, p0 int) int {
	hd := len(rows) / nq
	n := hd &^ 7
	if !useSIMD || !simdOK || n == 0 || len(w) < len(outs)*nq || off < 0 {
		return 0
	}
	for _, o := range outs {
		if off+hd > len(o) {
			return 0
		}
	}
	r, t := unsafe.Pointer(&rows[0]), 0
	if weightedTilesOK(hd) && off == 0 && evenRows(outs, hd) {
		scatterTiles(outs, w, r, nq, group, p0, n)
		t = len(outs)
	}
	for ; t+2 <= len(outs); t += 2 {
		// Key t+1 is seen from query j1 on, key t from j0 ≤ j1: t's
		// terms before j1 go first, then both keys' together.
		j0, j1 := firstSeer(t, group, p0), firstSeer(t+1, group, p0)
		a, b := unsafe.Pointer(&outs[t][off]), unsafe.Pointer(&outs[t+1][off])
		weighted1(a, w[t*nq+j0:t*nq+j1], unsafe.Add(r, 4*j0*hd), hd, n)
		weightedPair(a, b, w[t*nq+j1:(t+1)*nq], w[(t+1)*nq+j1:(t+2)*nq], unsafe.Add(r, 4*j1*hd), hd, n)
	}
	if t < len(outs) {
		j0 := firstSeer(t, group, p0)
		weighted1(unsafe.Pointer(&outs[t][off]), w[t*nq+j0:(t+1)*nq], unsafe.Add(r, 4*j0*hd), hd, n)
	}
	archsimd.ClearAVXUpperBits() // scalar Go float code follows (docs/engine-attention.md, "VZEROUPPER in attention")
	return n
}

// scatterTiles does attnScatterBlockVec's work with the register tiles:
// per tile of keys, each key's terms from the queries before the tile's
// last key's first seer go first (weighted1), then the tile adds the
// queries every key of it sees, so each element still adds its queries
// in ascending order. outs are rows hd apart (evenRows).
func scatterTiles(outs [][]float32, w []float32, r unsafe.Pointer, nq, group, p0, n int) {
	hd := len(outs[0])
	nw := n &^ (weightedStrip() - 1) // whole strips
	for t := 0; t < len(outs); t += len(attnTileZ) {
		rows := min(len(attnTileZ), len(outs)-t)
		jc := firstSeer(t+rows-1, group, p0)
		for i := t; i < t+rows; i++ {
			j0 := firstSeer(i, group, p0)
			weighted1(unsafe.Pointer(&outs[i][0]), w[i*nq+j0:i*nq+jc], unsafe.Add(r, 4*j0*hd), hd, nw)
		}
		weightedTile(unsafe.Pointer(&outs[t][0]), hd, unsafe.Pointer(&w[t*nq+jc]), nq, unsafe.Add(r, 4*jc*hd), hd, nq-jc, rows, nw)
		for i := t; i < t+rows && nw < n; i++ {
			j0 := firstSeer(i, group, p0)
			weighted1(unsafe.Pointer(&outs[i][nw]), w[i*nq+j0:(i+1)*nq], unsafe.Add(r, 4*(j0*hd+nw)), hd, n-nw)
		}
	}
}

// mul64Vec multiplies p by r four at a time and returns how many it did.
func mul64Vec(p []float64, r float64) int {
	if !useSIMD || !simdOK {
		return 0
	}
	n, rv := len(p)&^3, bc4(r)
	for t := 0; t < n; t += 4 {
		x := (*[4]float64)(p[t : t+4])
		archsimd.LoadFloat64x4(x).Mul(rv).Store(x)
	}
	archsimd.ClearAVXUpperBits() // scalar Go float code follows (docs/engine-attention.md, "VZEROUPPER in attention")
	return n
}

// dsVec sets sc[t] = float32(p[t]·(dp[t]−dsum)·scale) four at a time and
// returns how many it did.
func dsVec(sc []float32, p []float64, dp []float32, dsum, scale float64) int {
	if !useSIMD || !simdOK || len(sc) < len(p) || len(dp) < len(p) {
		return 0
	}
	n, ds, s := len(p)&^3, bc4(dsum), bc4(scale)
	for t := 0; t < n; t += 4 {
		x := archsimd.LoadFloat64x4((*[4]float64)(p[t : t+4]))
		store4(sc[t:], x.Mul(load4(dp[t:]).Sub(ds)).Mul(s))
	}
	archsimd.ClearAVXUpperBits() // scalar Go float code follows (docs/engine-attention.md, "VZEROUPPER in attention")
	return n
}

// dot64LanesVec adds the products p[t]·dp[t] of p's leading multiple of 8
// into dot64Lanes' eight lanes s (two 4-lane vectors; a multiply, then an
// add) and returns how many it did.
func dot64LanesVec(p []float64, dp []float32, s *[8]float64) int {
	if !useSIMD || !simdOK || len(dp) < len(p) {
		return 0
	}
	n := len(p) &^ 7
	var a, b archsimd.Float64x4
	for t := 0; t < n; t += 8 {
		a = a.Add(archsimd.LoadFloat64x4((*[4]float64)(p[t : t+4])).Mul(load4(dp[t:])))
		b = b.Add(archsimd.LoadFloat64x4((*[4]float64)(p[t+4 : t+8])).Mul(load4(dp[t+4:])))
	}
	a.Store((*[4]float64)(s[:4]))
	b.Store((*[4]float64)(s[4:]))
	archsimd.ClearAVXUpperBits() // scalar Go float code follows (docs/engine-attention.md, "VZEROUPPER in attention")
	return n
}

// scatterColumnsOK reports whether attnBack.keys reads the block's
// weights where its queries left them (scatterColumns) for heads of hd:
// the register tiles take whole 64-element strips.
func scatterColumnsOK(hd int) bool {
	return weightedTilesOK(hd) && hd%weightedStrip() == 0
}

// scatterColumns is attnScatterBlock with key t's weight from query j
// read at w[j·ld+t], in the queries' rows, so the block need not
// transpose them: at 2048 tokens the transposes' reads, 8 KiB apart,
// shared an L1 set and took a tenth of the backward. The tiles read
// A[i][p] ld floats apart in p; each key adds its queries in ascending
// order as scatterTiles does. outs are rows hd apart (attnBackScratch's
// slab), hd passed scatterColumnsOK.
func scatterColumns(outs [][]float32, w []float32, ld int, rows []float32, nq, group, p0 int) {
	hd := len(rows) / nq
	if len(outs) == 0 {
		return
	}
	if len(outs[0]) != hd || !evenRows(outs, hd) || len(w) < (nq-1)*ld+len(outs) || len(rows) != nq*hd {
		panic("engine: scatterColumns: the block's buffers do not have its layout")
	}
	r := unsafe.Pointer(&rows[0])
	for t := 0; t < len(outs); t += len(attnTileZ) {
		n := min(len(attnTileZ), len(outs)-t)
		jc := firstSeer(t+n-1, group, p0)
		for i := t; i < t+n; i++ {
			j0 := firstSeer(i, group, p0)
			weightedTileT(unsafe.Pointer(&outs[i][0]), hd, unsafe.Pointer(&w[j0*ld+i]), 1, ld, unsafe.Add(r, 4*j0*hd), hd, jc-j0, 1, hd)
		}
		weightedTileT(unsafe.Pointer(&outs[t][0]), hd, unsafe.Pointer(&w[jc*ld+t]), 1, ld, unsafe.Add(r, 4*jc*hd), hd, nq-jc, n, hd)
	}
}
