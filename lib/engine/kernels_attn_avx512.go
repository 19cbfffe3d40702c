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

// dotsScratch is dotsBlock16's doubled queries and packed key tile. Their
// addresses reach the assembly tiles through function values, which escape
// analysis cannot follow, so arrays on the stack were moved to the heap:
// 40 KiB of garbage per call, on which the collector let a 0.6B-shaped
// 4096-token step's peak RSS grow to twice its live heap (8.0 GB against
// 4.2 GB, BenchmarkTrainMemory). A pool keeps them.
type dotsScratch struct {
	q2 [8192]float32
	kt [dotsTile * packMaxHead]float32
}

var dotsScratchPool = sync.Pool{New: func() any { return new(dotsScratch) }}

// dotsBlock16 does attnDotsBlockVec's work dotsTile keys at a time and
// returns how many keys it did; hd is a multiple of 8 and the operands
// passed blockFits. Queries go in chunks whose doubled copies fit q2 (the
// key tile is packed again per chunk, from L2, unless pairs holds every
// tile packed: packKeyPairs, headPack), and four at a time through the
// register tile attnDotsZ.
func dotsBlock16(sc []float32, ld int, qs [][]float32, group, p0 int, keys []float32, stride, off, nk int, pairs []float32) int {
	hd, nq := len(qs[0]), len(qs)
	sp := dotsScratchPool.Get().(*dotsScratch)
	defer dotsScratchPool.Put(sp)
	q2, kt := &sp.q2, &sp.kt
	per := len(q2) / (2 * hd)
	end := nk &^ (dotsTile - 1)
	for c0 := 0; c0 < nq; c0 += per {
		c1 := min(nq, c0+per)
		for j := c0; j < c1; j++ {
			double8(q2[(j-c0)*2*hd:], qs[j])
		}
		for t := 0; t < end; t += dotsTile {
			j := max(c0, firstSeeing(t, group, p0))
			if j >= c1 {
				break // later tiles are seen by later queries only
			}
			var k unsafe.Pointer
			if len(pairs) >= (t+dotsTile)*hd {
				k = unsafe.Pointer(&pairs[t*hd])
			} else {
				packPairs(kt[:dotsTile*hd], keys, t, stride, off, hd)
				k = unsafe.Pointer(&kt[0])
			}
			for ; j < c1; j += len(attnDotsZ) {
				r := min(len(attnDotsZ), c1-j)
				_ = sc[(j+r-1)*ld+t+dotsTile-1] // the tile's last score
				attnDotsZ[r-1](&sc[j*ld+t], uintptr(4*ld), &q2[(j-c0)*2*hd], (*float32)(k), hd)
			}
		}
	}
	return end
}

// double8 writes each 8-element chunk of q twice in a row into dst.
func double8(dst, q []float32) {
	dst = dst[:2*len(q)]
	for i := 0; i+8 <= len(q); i += 8 {
		x := load8f(q[i:])
		store8f(dst[2*i:], x)
		store8f(dst[2*i+8:], x)
	}
}

// packPairs copies keys t..t+dotsTile-1 into buf as four pairs, pair m
// (keys t+2m and t+2m+1) at m·2·hd, interleaved by 8-element chunks.
func packPairs(buf, keys []float32, t, stride, off, hd int) {
	for m := range dotsTile / 2 {
		a, b := keys[(t+2*m)*stride+off:][:hd], keys[(t+2*m+1)*stride+off:][:hd]
		p := buf[m*2*hd:][:2*hd]
		for i := 0; i+8 <= hd; i += 8 {
			store8f(p[2*i:], load8f(a[i:]))
			store8f(p[2*i+8:], load8f(b[i:]))
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

// packKeyPairs writes the whole tiles of keys (contiguous rows of hd) into
// dst in dotsBlock16's layout, tile t/dotsTile at t·hd, so that a caller
// scoring many blocks against the same keys (the backward pass) packs them
// once (keyPairsOK(hd): dotsBlock16 runs for that head size).
func packKeyPairs(dst, keys []float32, n, hd int) {
	for t := 0; t+dotsTile <= n; t += dotsTile {
		packPairs(dst[t*hd:(t+dotsTile)*hd], keys, t, hd, 0, hd)
	}
}

// keyPairsOK reports whether dotsBlock16 runs for heads of hd.
func keyPairsOK(hd int) bool {
	return useSIMD && simdOK && avx512 && hd > 0 && hd%8 == 0 && hd <= packMaxHead
}
