//go:build goexperiment.simd && amd64

package engine

import (
	"simd/archsimd"
	"sync"
	"unsafe"
)

// The blocked attention kernels' inner loops address the cache through
// pointers checked once per call (blockFits): indexing slices in the loops
// made the compiler spill and re-check each row's slice header per vector
// and ran at a fifth of the arithmetic's speed.

// blockFits reports whether rows holds nk rows of hd elements at
// t*stride+off, and qs hd-element heads, so that the pointer kernels stay
// inside them.
func blockFits(qs [][]float32, rows []float32, nk, stride, off, hd int) bool {
	for _, q := range qs {
		if len(q) != hd {
			return false
		}
	}
	return nk > 0 && off >= 0 && (nk-1)*stride+off+hd <= len(rows)
}

// packMaxHead is the largest head the kernels copy a tile of cached rows
// for. A tile's rows lie stride elements apart in the cache, for 0.6B
// 4 KiB, so they all fall in the same few L1 sets and, with the block's
// queries or outputs, exceed the sets' eight ways; packed, they are
// contiguous.
const packMaxHead = 256

// packRows copies rows t..t+n-1 (hd elements at t*stride+off) into buf
// one after another and returns its address, or nil when they do not fit.
// Rows already contiguous (stride hd: the backward's per-head copies) are
// not copied.
func packRows(buf, rows []float32, t, n, stride, off, hd int) unsafe.Pointer {
	if stride == hd {
		return rowAt(rows, t, stride, off)
	}
	if n*hd > len(buf) {
		return nil
	}
	for i := range n {
		o := (t+i)*stride + off
		copy(buf[i*hd:(i+1)*hd], rows[o:o+hd])
	}
	return unsafe.Pointer(&buf[0])
}

// v8 loads eight float32 from p + 4i bytes.
func v8(p unsafe.Pointer, i int) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 4*i)))
}

// rowAt is the address of rows[t*stride+off].
func rowAt(rows []float32, t, stride, off int) unsafe.Pointer {
	return unsafe.Pointer(&rows[t*stride+off])
}

// attnDotsBlockVec does attnDotsBlock four keys at a time when the head is
// a multiple of 8 and returns how many keys it did for every query that
// sees them. Per tile of four keys, which then stay in L1, it scores each
// query that sees the tile; each score's accumulator holds attnDot's eight
// lanes and laneSums4 adds them in attnDot's tree.
func attnDotsBlockVec(sc []float32, ld int, qs [][]float32, group, p0 int, keys []float32, stride, off int, tiles []float32) int {
	hd, nq := len(qs[0]), len(qs)
	nk := p0 + nq/group // keys seen by the block's last position
	if !useSIMD || !simdOK || hd == 0 || hd%8 != 0 || !blockFits(qs, keys, nk, stride, off, hd) {
		return 0
	}
	t := 0
	if attnAVX2 {
		t = dotsBlockY(sc, ld, qs, group, p0, keys, stride, off, nk)
	} else if avx512 && hd <= packMaxHead {
		t = dotsBlock16(sc, ld, qs, group, p0, keys, stride, off, nk, tiles)
	}
	var buf [4 * packMaxHead]float32
	for ; t+4 <= nk; t += 4 {
		k, ks, j := packRows(buf[:], keys, t, 4, stride, off, hd), hd, firstSeeing(t, group, p0)
		if k == nil {
			k, ks = rowAt(keys, t, stride, off), stride
		}
		for ; j < nq; j++ {
			dots4x1(sc[j*ld+t:j*ld+t+4], unsafe.Pointer(&qs[j][0]), k, ks, hd)
		}
	}
	archsimd.ClearAVXUpperBits() // scalar Go float code follows (docs/engine-attention.md, "VZEROUPPER in attention")
	return t
}

// dots4x1 stores the scores of query q against the four rows from k
// (stride elements apart) to d[:4]. One query at a time: a tile of two
// queries (eight accumulators) made the compiler spill two of them, whose
// adds then waited on memory, and ran slower (BenchmarkAttention prefill
// 53 vs 46 CPU-ms at head dim 128).
func dots4x1(d []float32, q, k unsafe.Pointer, stride, hd int) {
	k1 := unsafe.Add(k, 4*stride)
	k2 := unsafe.Add(k1, 4*stride)
	k3 := unsafe.Add(k2, 4*stride)
	var a0, a1, a2, a3 archsimd.Float32x8
	for i := 0; i < hd; i += 8 {
		x := v8(q, i)
		a0 = v8(k, i).MulAdd(x, a0)
		a1 = v8(k1, i).MulAdd(x, a1)
		a2 = v8(k2, i).MulAdd(x, a2)
		a3 = v8(k3, i).MulAdd(x, a3)
	}
	laneSums4(d, a0, a1, a2, a3)
}

// firstSeeing is the first query of a block that sees key t, rounded down
// to a pair.
func firstSeeing(t, group, p0 int) int {
	if t <= p0 {
		return 0
	}
	return (t - p0) * group &^ 1
}

// rowsScratchPool holds attnWeightedBlockVec's packed rows, pooled for the
// reason dotsScratch is: the tiles take their address through function
// values, so a stack array would be a heap allocation per call.
var rowsScratchPool = sync.Pool{New: func() any { return new([attnBlock * packMaxHead]float32) }}

// attnWeightedBlockVec does attnWeightedBlock for the heads' leading
// multiple of 8 and returns how many elements it did. The register tiles
// need each query head's outputs evenly spaced (stridedRows): the
// forward's are its rows of the batch, the backward's a contiguous slab. It takes the values
// attnBlock rows at a time (so they stay in L1 however the cache stride
// aliases) and adds each block's rows to the outputs of the queries that
// see them, two queries per pass over the rows. Rows already contiguous
// (packed heads: the forward's headPack, the backward's keys for dq) go
// weightedSpan at a time through the register tiles: eight rows a call
// left a tile of 24 accumulators loading and storing them for eight
// multiply-adds each, and the triangle's rows to the one-output loop.
func attnWeightedBlockVec(outs [][]float32, sc []float32, ld, group, p0 int, rows []float32, stride, off int) int {
	hd, nq := len(outs[0]), len(outs)
	n, nk := hd&^7, p0+nq/group
	if !useSIMD || !simdOK || n == 0 || !blockFits(outs, rows, nk, stride, off, hd) {
		return 0
	}
	buf := rowsScratchPool.Get().(*[attnBlock * packMaxHead]float32)
	defer rowsScratchPool.Put(buf)
	ldc, even := stridedRows(outs, group)
	tiles := weightedTilesOK(hd) && even
	blk := attnBlock
	if stride == hd && tiles {
		blk = weightedSpan // contiguous rows: no aliasing to avoid
	}
	seen := func(j, t0 int) []float32 { // query j's probabilities of the block at t0
		end := min(p0+j/group+1, t0+blk)
		return sc[j*ld+t0 : j*ld+max(end, t0)]
	}
	for t0 := 0; t0 < nk; t0 += blk {
		r, rs, j := packRows(buf[:], rows, t0, min(blk, nk-t0), stride, off, hd), hd, firstSeeing(t0, group, p0)
		if r == nil {
			r, rs = rowAt(rows, t0, stride, off), stride
		}
		if tiles {
			j -= j % group // from a position's first head
			weightedTiles(outs[j:], sc[j*ld+t0:], ld, group, ldc, r, rs, n, func(j1 int) []float32 { return seen(j+j1, t0) })
			continue
		}
		for ; j+2 <= nq; j += 2 {
			pa, pb := seen(j, t0), seen(j+1, t0)
			a, b := unsafe.Pointer(&outs[j][0]), unsafe.Pointer(&outs[j+1][0])
			weightedPair(a, b, pa, pb[:len(pa)], r, rs, n)
			if len(pb) > len(pa) { // rows only the later position sees
				weighted1(b, pb[len(pa):], unsafe.Add(r, 4*len(pa)*rs), rs, n)
			}
		}
		if j < nq {
			weighted1(unsafe.Pointer(&outs[j][0]), seen(j, t0), r, rs, n)
		}
	}
	archsimd.ClearAVXUpperBits() // scalar Go float code follows (docs/engine-attention.md, "VZEROUPPER in attention")
	return n
}

// weightedSpan is how many contiguous value rows attnWeightedBlockVec
// hands the register tiles at once: 64 rows of the head are 32 KiB at
// head dim 128, which stay in L1 across the block's tiles (256 rows, from
// L2, were slower at 512 tokens; BenchmarkAttentionLong).
const weightedSpan = 64

// weightedTiles adds each output's weighted rows (ws(j): the weights of
// output j, rows from r, rs elements apart) to outs[j][:n] with the
// register tiles, one query head at a time: outputs j ≡ g (mod step) lie
// ldc elements apart (stridedRows), at consecutive positions. A tile of a
// head's outputs takes the rows its first output sees (the fewest: later
// positions see as many or more), then each output its remaining rows,
// so each element still adds its rows in ascending order. p[j·ld] is
// output j's weight of the first row, and n is a multiple of 8.
func weightedTiles(outs [][]float32, p []float32, ld, step, ldc int, r unsafe.Pointer, rs, n int, ws func(j int) []float32) {
	for g := range min(step, len(outs)) {
		m := (len(outs) - g + step - 1) / step // outputs g, g+step, ...
		for j := 0; j < m; j += len(attnTileZ) {
			rows := min(len(attnTileZ), m-j) // attnTileY's as many
			weightedHeadTile(outs, p, ld, step, ldc, r, rs, n, ws, g+j*step, rows)
		}
	}
}

// weightedHeadTile is weightedTiles' tile of rows outputs from j0, step
// apart.
func weightedHeadTile(outs [][]float32, p []float32, ld, step, ldc int, r unsafe.Pointer, rs, n int, ws func(j int) []float32, j0, rows int) {
	nw := n &^ (weightedStrip() - 1) // whole strips
	common := len(ws(j0))
	weightedTile(unsafe.Pointer(&outs[j0][0]), ldc, unsafe.Pointer(&p[j0*ld]), step*ld, r, rs, common, rows, nw)
	for i := j0; i < j0+rows*step; i += step {
		// Only pointers with work behind them are formed: o + nw and
		// r + common rows can be one past their allocation, which the
		// collector takes for a bad pointer (make test-engine-checkptr).
		pi, o := ws(i), unsafe.Pointer(&outs[i][0])
		if len(pi) > common {
			weighted1(o, pi[common:], unsafe.Add(r, 4*common*rs), rs, nw)
		}
		if n > nw {
			weighted1(unsafe.Add(o, 4*nw), pi, unsafe.Add(r, 4*nw), rs, n-nw)
		}
	}
}

// weightedPair adds Σ_t pa[t]·row t to a[:n] and Σ_t pb[t]·row t to b[:n]
// (rows from r, stride elements apart; len(pa) == len(pb)), each element in
// ascending t: 16 elements of each output stay in registers across the
// rows, and each row vector is loaded once for both.
func weightedPair(a, b unsafe.Pointer, pa, pb []float32, r unsafe.Pointer, stride, n int) {
	if len(pa) == 0 {
		return
	}
	pb = pb[:len(pa)]
	i := 0
	if avx512 {
		i = weightedPair16(a, b, pa, pb, r, stride, n)
	}
	for ; i+16 <= n; i += 16 {
		a0, a1, b0, b1 := v8(a, i), v8(a, i+8), v8(b, i), v8(b, i+8)
		p := unsafe.Add(r, 4*i)
		for t, w := range pa {
			va, vb := archsimd.BroadcastFloat32x8(w), archsimd.BroadcastFloat32x8(pb[t])
			x, y := v8(p, 0), v8(p, 8)
			a0, b0 = x.MulAdd(va, a0), x.MulAdd(vb, b0)
			a1, b1 = y.MulAdd(va, a1), y.MulAdd(vb, b1)
			if t+1 < len(pa) {
				p = unsafe.Add(p, 4*stride)
			}
		}
		st8(a, i, a0)
		st8(a, i+8, a1)
		st8(b, i, b0)
		st8(b, i+8, b1)
	}
	if i < n {
		weighted1(unsafe.Add(a, 4*i), pa, unsafe.Add(r, 4*i), stride, 8)
		weighted1(unsafe.Add(b, 4*i), pb, unsafe.Add(r, 4*i), stride, 8)
	}
}

// weighted1 adds Σ_t p[t]·row t to out[:n], each element in ascending t.
func weighted1(out unsafe.Pointer, p []float32, r unsafe.Pointer, stride, n int) {
	if len(p) == 0 {
		return
	}
	i := 0
	if avx512 {
		i = weighted16(out, p, r, stride, n)
	}
	for ; i < n; i += 8 {
		acc, q := v8(out, i), unsafe.Add(r, 4*i)
		for t, w := range p {
			acc = v8(q, 0).MulAdd(archsimd.BroadcastFloat32x8(w), acc)
			if t+1 < len(p) {
				q = unsafe.Add(q, 4*stride)
			}
		}
		st8(out, i, acc)
	}
}

// st8 stores v to the eight float32 at p + 4i bytes.
func st8(p unsafe.Pointer, i int, v archsimd.Float32x8) {
	v.Store((*[8]float32)(unsafe.Add(p, 4*i)))
}
