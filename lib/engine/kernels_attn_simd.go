//go:build goexperiment.simd && amd64

package engine

import "simd/archsimd"

// attnDotsVec does attnDots four rows at a time when the head is a
// multiple of 8 and returns how many rows it did: all of them. Each row's
// accumulator vector holds attnDot's eight lanes; two rounds of pairwise
// horizontal adds and one add of the halves form attnDot's tree
// ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)) for four rows at once. The last one
// to three rows go as a group of four too, the missing rows repeating the
// last one and their sums dropped: each lane is its row's own, so the rows
// get attnDot's bits. Left to attnDot's scalar fused multiply-adds
// (fma32Soft), a decoding row's one to three keys past a multiple of four
// cost more than all the others below 32 positions (2026-11-29, the 0.6B
// shape, one layer's attention, one core: at positions 14, 16, 17 and 18
// 32, 17, 28 and 38 µs that way, 10, 10, 12 and 15 µs this way).
func attnDotsVec(dst, q, rows []float32, stride, off int) int {
	hd := len(q)
	if !useSIMD || !simdOK || hd == 0 || hd%8 != 0 {
		return 0
	}
	n := len(dst)
	for t := 0; t < n; t += 4 {
		r0, r1, r2, r3 := groupRows(rows, t*stride+off, stride, hd, n-1-t)
		var a0, a1, a2, a3 archsimd.Float32x8
		for i := 0; i+8 <= hd; i += 8 {
			qq := load8f(q[i:])
			a0 = load8f(r0[i:]).MulAdd(qq, a0)
			a1 = load8f(r1[i:]).MulAdd(qq, a1)
			a2 = load8f(r2[i:]).MulAdd(qq, a2)
			a3 = load8f(r3[i:]).MulAdd(qq, a3)
		}
		laneSumsUpTo4(dst[t:n], a0, a1, a2, a3)
	}
	archsimd.ClearAVXUpperBits() // scalar Go float code follows: see exp8
	return n
}

// attnDotsPairVec is attnDotsVec for two queries: eight accumulators
// (four rows × two queries), each row vector loaded once. With d0 and d1
// of one length it does every row (the last group as attnDotsVec's),
// else the leading multiple of four of the shorter.
func attnDotsPairVec(d0, d1, q0, q1, rows []float32, stride, off int) int {
	hd := len(q0)
	if !useSIMD || !simdOK || hd == 0 || hd%8 != 0 || len(q1) != hd {
		return 0
	}
	n := len(d0)
	if len(d1) != n {
		n = min(n, len(d1)) &^ 3
	}
	for t := 0; t < n; t += 4 {
		r0, r1, r2, r3 := groupRows(rows, t*stride+off, stride, hd, n-1-t)
		var a0, a1, a2, a3, b0, b1, b2, b3 archsimd.Float32x8
		for i := 0; i+8 <= hd; i += 8 {
			x, y := load8f(q0[i:]), load8f(q1[i:])
			k := load8f(r0[i:])
			a0, b0 = k.MulAdd(x, a0), k.MulAdd(y, b0)
			k = load8f(r1[i:])
			a1, b1 = k.MulAdd(x, a1), k.MulAdd(y, b1)
			k = load8f(r2[i:])
			a2, b2 = k.MulAdd(x, a2), k.MulAdd(y, b2)
			k = load8f(r3[i:])
			a3, b3 = k.MulAdd(x, a3), k.MulAdd(y, b3)
		}
		laneSumsUpTo4(d0[t:n], a0, a1, a2, a3)
		laneSumsUpTo4(d1[t:n], b0, b1, b2, b3)
	}
	archsimd.ClearAVXUpperBits() // scalar Go float code follows: see exp8
	return n
}

// groupRows is the four rows of hd values at o, o+stride, … when rows
// 0..last exist; with last below 3 the missing ones repeat row last
// (laneSumsUpTo4 drops their sums).
func groupRows(rows []float32, o, stride, hd, last int) (r0, r1, r2, r3 []float32) {
	return rows[o : o+hd], rows[o+min(1, last)*stride:][:hd], rows[o+min(2, last)*stride:][:hd], rows[o+min(3, last)*stride:][:hd]
}

// laneSums4 stores the attnDot lane trees of four accumulators to dst[:4].
func laneSums4(dst []float32, a0, a1, a2, a3 archsimd.Float32x8) {
	h := a0.AddPairsGrouped(a1).AddPairsGrouped(a2.AddPairsGrouped(a3))
	h.GetLo().Add(h.GetHi()).Store((*[4]float32)(dst[:4]))
}

// laneSumsUpTo4 is laneSums4 for a row group's last rows: it stores the
// first min(4, len(dst)) trees, dropping the repeated rows' (groupRows).
func laneSumsUpTo4(dst []float32, a0, a1, a2, a3 archsimd.Float32x8) {
	if len(dst) >= 4 {
		laneSums4(dst, a0, a1, a2, a3)
		return
	}
	var s [4]float32
	laneSums4(s[:], a0, a1, a2, a3)
	copy(dst, s[:])
}

// attnWeightedVec does attnWeighted for out's leading multiple of 8 and
// returns how many elements it did. It takes the rows in blocks of
// attnBlock and, per block, keeps up to four vectors of out in registers
// across the block's rows: the block's rows stay in L1 across the passes
// even when the cache stride is a multiple of 4 KiB.
func attnWeightedVec(out, p, rows []float32, stride, off int) int {
	n := len(out) &^ 7
	if !useSIMD || !simdOK || n == 0 {
		return 0
	}
	for t0 := 0; t0 < len(p); t0 += attnBlock {
		pb := p[t0:min(t0+attnBlock, len(p))]
		weightedBlock(out[:n], pb, rows, stride, off+t0*stride)
	}
	archsimd.ClearAVXUpperBits() // scalar Go float code follows: see exp8
	return n
}

const attnBlock = 8

// weightedBlock adds Σ_t p[t]·rows[t*stride+off:][:len(out)] to out,
// len(out) a multiple of 8.
func weightedBlock(out, p, rows []float32, stride, off int) {
	n, i := len(out), 0
	for ; i+32 <= n; i += 32 {
		a, b, c, d := load8f(out[i:]), load8f(out[i+8:]), load8f(out[i+16:]), load8f(out[i+24:])
		o := off + i
		for _, w := range p {
			r, v := rows[o:o+32], archsimd.BroadcastFloat32x8(w)
			a = load8f(r).MulAdd(v, a)
			b = load8f(r[8:]).MulAdd(v, b)
			c = load8f(r[16:]).MulAdd(v, c)
			d = load8f(r[24:]).MulAdd(v, d)
			o += stride
		}
		store8f(out[i:], a)
		store8f(out[i+8:], b)
		store8f(out[i+16:], c)
		store8f(out[i+24:], d)
	}
	for ; i+16 <= n; i += 16 {
		a, b := load8f(out[i:]), load8f(out[i+8:])
		o := off + i
		for _, w := range p {
			r, v := rows[o:o+16], archsimd.BroadcastFloat32x8(w)
			a = load8f(r).MulAdd(v, a)
			b = load8f(r[8:]).MulAdd(v, b)
			o += stride
		}
		store8f(out[i:], a)
		store8f(out[i+8:], b)
	}
	if i < n {
		a, o := load8f(out[i:]), off+i
		for _, w := range p {
			a = load8f(rows[o:o+8]).MulAdd(archsimd.BroadcastFloat32x8(w), a)
			o += stride
		}
		store8f(out[i:], a)
	}
}
