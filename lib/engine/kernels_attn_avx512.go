//go:build goexperiment.simd && amd64

package engine

import (
	"simd/archsimd"
	"sync"
	"unsafe"
)

// 512-bit twins of the blocked attention kernels, for CPUs with AVX-512.
// They keep the 256-bit kernels' bits: a weighted sum's lane is still one
// output element adding its terms in ascending order, and a score is still
// attnDot's eight lanes and tree; a 16-lane register holds the eight lanes of
// two keys (keys packed pairwise interleaved, the query doubled), so each
// fused multiply-add does the work of two 8-lane ones.

// v16 loads sixteen float32 from p + 4i bytes.
func v16(p unsafe.Pointer, i int) archsimd.Float32x16 {
	return archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(p, 4*i)))
}

// st16 stores v to the sixteen float32 at p + 4i bytes.
func st16(p unsafe.Pointer, i int, v archsimd.Float32x16) {
	v.Store((*[16]float32)(unsafe.Add(p, 4*i)))
}

// dotsScratch is dotsBlock16's copy of queries that are not evenly
// spaced and its transposed key tile. Their addresses reach the assembly
// tiles, which escape analysis cannot follow, so arrays on the stack were
// moved to the heap: 40 KiB of garbage per call, on which the collector
// let a 0.6B-shaped 4096-token step's peak RSS grow to twice its live heap
// (8.0 GB against 4.2 GB, BenchmarkTrainMemory). A pool keeps them.
type dotsScratch struct {
	q  [8192]float32
	kt [dotsTile * packMaxHead]float32
}

var dotsScratchPool = sync.Pool{New: func() any { return new(dotsScratch) }}

// dotsBlock16 does attnDotsBlockVec's work dotsTile keys at a time and
// returns how many keys it did; hd is a multiple of 8 and the operands
// passed blockFits. Per tile of keys, transposed (packKeyTile, from L2,
// unless tiles holds every tile so: packKeyTiles, headPack) and then in
// L1, the register tiles attnDotsT score every query that sees it, three
// at a time. Queries not evenly spaced hd apart are copied so in chunks.
func dotsBlock16(sc []float32, ld int, qs [][]float32, group, p0 int, keys []float32, stride, off, nk int, tiles []float32) int {
	hd, nq := len(qs[0]), len(qs)
	sp := dotsScratchPool.Get().(*dotsScratch)
	defer dotsScratchPool.Put(sp)
	per, inPlace := len(sp.q)/hd, evenRows(qs, hd)
	if inPlace {
		per = nq
	}
	end := nk &^ (dotsTile - 1)
	for c0 := 0; c0 < nq; c0 += per {
		c1 := min(nq, c0+per)
		q := &qs[c0][0]
		if !inPlace {
			for j := c0; j < c1; j++ {
				copy(sp.q[(j-c0)*hd:(j-c0+1)*hd], qs[j])
			}
			q = &sp.q[0]
		}
		for t := 0; t < end; t += dotsTile {
			j := max(c0, firstSeeing(t, group, p0))
			if j >= c1 {
				break // later tiles are seen by later queries only
			}
			k := &sp.kt[0]
			if len(tiles) >= (t+dotsTile)*hd {
				k = &tiles[t*hd]
			} else {
				packKeyTile(sp.kt[:dotsTile*hd], keys, t, stride, off, hd)
			}
			_ = sc[(c1-1)*ld+t+dotsTile-1] // the last query's last score of the tile
			scoreTile(&sc[j*ld+t], ld, (*float32)(unsafe.Add(unsafe.Pointer(q), 4*(j-c0)*hd)), k, hd, c1-j)
		}
	}
	return end
}

// scoreTile stores the scores of n queries (hd apart from q) against the
// transposed key tile k to d, rows ld floats apart: groups of three, then
// the one or two left.
func scoreTile(d *float32, ld int, q, k *float32, hd, n int) {
	if g := n / 3; g > 0 {
		attnDotsT3(d, uintptr(4*ld), q, uintptr(4*hd), k, hd, g)
		n -= 3 * g
		if n == 0 {
			return // d and q one group past the last: formed only with work behind them
		}
		d, q = (*float32)(unsafe.Add(unsafe.Pointer(d), 4*3*g*ld)), (*float32)(unsafe.Add(unsafe.Pointer(q), 4*3*g*hd))
	}
	if n == 2 {
		attnDotsT2(d, uintptr(4*ld), q, uintptr(4*hd), k, hd, 1)
	} else if n == 1 {
		attnDotsT1(d, uintptr(4*ld), q, uintptr(4*hd), k, hd, 1)
	}
}

// packKeyTile copies keys t..t+dotsTile-1 into buf transposed: element i
// of key t+m at buf[i·dotsTile+m], so one vector holds an element of
// every key of the tile (attnDotsT's lanes).
// Whole blocks of 16 elements go through the register transpose
// attnKeyTileT (the scalar loop took a tenth of a 512-token forward).
func packKeyTile(buf, keys []float32, t, stride, off, hd int) {
	buf = buf[:dotsTile*hd]
	_ = keys[(t+dotsTile-1)*stride+off+hd-1] // the tile's last element
	i0 := hd &^ 15
	if i0 > 0 {
		attnKeyTileT(&buf[0], &keys[t*stride+off], uintptr(4*stride), i0/16)
	}
	for m := range dotsTile {
		k := keys[(t+m)*stride+off:][:hd]
		for i := i0; i < hd; i++ {
			buf[i*dotsTile+m] = k[i]
		}
	}
}

// weightedPair16 does weightedPair's work 32 elements at a time and
// returns how many elements it did (whole 64-element strips of contiguous
// outputs go to the register tiles first: weightedTiles).
func weightedPair16(a, b unsafe.Pointer, pa, pb []float32, r unsafe.Pointer, stride, n int) int {
	i := 0
	for ; i+32 <= n; i += 32 {
		a0, a1, b0, b1 := v16(a, i), v16(a, i+16), v16(b, i), v16(b, i+16)
		p := unsafe.Add(r, 4*i)
		for t, w := range pa {
			va, vb := archsimd.BroadcastFloat32x16(w), archsimd.BroadcastFloat32x16(pb[t])
			x, y := v16(p, 0), v16(p, 16)
			a0, b0 = x.MulAdd(va, a0), x.MulAdd(vb, b0)
			a1, b1 = y.MulAdd(va, a1), y.MulAdd(vb, b1)
			if t+1 < len(pa) {
				p = unsafe.Add(p, 4*stride)
			}
		}
		st16(a, i, a0)
		st16(a, i+16, a1)
		st16(b, i, b0)
		st16(b, i+16, b1)
	}
	return i
}

// weighted16 does weighted1's work 128 elements at a time (eight
// accumulators, so the fused multiply-adds of successive rows overlap),
// then 64, and returns how many elements it did.
func weighted16(out unsafe.Pointer, p []float32, r unsafe.Pointer, stride, n int) int {
	i := 0
	for ; i+128 <= n; i += 128 {
		a0, a1, a2, a3 := v16(out, i), v16(out, i+16), v16(out, i+32), v16(out, i+48)
		a4, a5, a6, a7 := v16(out, i+64), v16(out, i+80), v16(out, i+96), v16(out, i+112)
		q := unsafe.Add(r, 4*i)
		for t, w := range p {
			v := archsimd.BroadcastFloat32x16(w)
			a0, a1 = v16(q, 0).MulAdd(v, a0), v16(q, 16).MulAdd(v, a1)
			a2, a3 = v16(q, 32).MulAdd(v, a2), v16(q, 48).MulAdd(v, a3)
			a4, a5 = v16(q, 64).MulAdd(v, a4), v16(q, 80).MulAdd(v, a5)
			a6, a7 = v16(q, 96).MulAdd(v, a6), v16(q, 112).MulAdd(v, a7)
			if t+1 < len(p) {
				q = unsafe.Add(q, 4*stride)
			}
		}
		st16(out, i, a0)
		st16(out, i+16, a1)
		st16(out, i+32, a2)
		st16(out, i+48, a3)
		st16(out, i+64, a4)
		st16(out, i+80, a5)
		st16(out, i+96, a6)
		st16(out, i+112, a7)
	}
	for ; i+64 <= n; i += 64 {
		a0, a1, a2, a3 := v16(out, i), v16(out, i+16), v16(out, i+32), v16(out, i+48)
		q := unsafe.Add(r, 4*i)
		for t, w := range p {
			v := archsimd.BroadcastFloat32x16(w)
			a0 = v16(q, 0).MulAdd(v, a0)
			a1 = v16(q, 16).MulAdd(v, a1)
			a2 = v16(q, 32).MulAdd(v, a2)
			a3 = v16(q, 48).MulAdd(v, a3)
			if t+1 < len(p) {
				q = unsafe.Add(q, 4*stride)
			}
		}
		st16(out, i, a0)
		st16(out, i+16, a1)
		st16(out, i+32, a2)
		st16(out, i+48, a3)
	}
	return i
}

// packKeyTiles writes the whole tiles of keys (contiguous rows of hd)
// into dst in dotsBlock16's layout, tile t/dotsTile at t·hd, so that a
// caller scoring many blocks against the same keys (the backward pass)
// packs them once (keyTilesOK(hd): dotsBlock16 runs for that head size).
func packKeyTiles(dst, keys []float32, n, hd int) {
	for t := 0; t+dotsTile <= n; t += dotsTile {
		packKeyTile(dst[t*hd:(t+dotsTile)*hd], keys, t, hd, 0, hd)
	}
}

// keyTilesOK reports whether dotsBlock16 runs for heads of hd.
func keyTilesOK(hd int) bool {
	return useSIMD && simdOK && avx512 && hd > 0 && hd%8 == 0 && hd <= packMaxHead
}
