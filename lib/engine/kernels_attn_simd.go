//go:build goexperiment.simd && amd64

package engine

import "simd/archsimd"

// attnDotsVec does attnDots four rows at a time when the head is a
// multiple of 8 and returns how many rows it did. Each row's accumulator
// vector holds dot1's eight lanes; two rounds of pairwise horizontal adds
// and one add of the halves form dot1's tree
// ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)) for four rows at once.
func attnDotsVec(dst, q, rows []float32, stride, off int) int {
	hd := len(q)
	if !useSIMD || !simdOK || hd == 0 || hd%8 != 0 {
		return 0
	}
	t := 0
	for ; t+4 <= len(dst); t += 4 {
		o := t*stride + off
		r0, r1 := rows[o:o+hd], rows[o+stride:o+stride+hd]
		r2, r3 := rows[o+2*stride:o+2*stride+hd], rows[o+3*stride:o+3*stride+hd]
		var a0, a1, a2, a3 archsimd.Float32x8
		for i := 0; i+8 <= hd; i += 8 {
			qq := load8f(q[i:])
			a0 = a0.Add(load8f(r0[i:]).Mul(qq))
			a1 = a1.Add(load8f(r1[i:]).Mul(qq))
			a2 = a2.Add(load8f(r2[i:]).Mul(qq))
			a3 = a3.Add(load8f(r3[i:]).Mul(qq))
		}
		h := a0.AddPairsGrouped(a1).AddPairsGrouped(a2.AddPairsGrouped(a3))
		h.GetLo().Add(h.GetHi()).Store((*[4]float32)(dst[t : t+4]))
	}
	return t
}

// attnWeightedVec does attnWeighted for out's leading multiple of 8,
// keeping up to four vectors of out in registers across all rows, and
// returns how many elements it did.
func attnWeightedVec(out, p, rows []float32, stride, off int) int {
	n := len(out) &^ 7
	if !useSIMD || !simdOK || n == 0 {
		return 0
	}
	i := 0
	for ; i+32 <= n; i += 32 {
		a, b, c, d := load8f(out[i:]), load8f(out[i+8:]), load8f(out[i+16:]), load8f(out[i+24:])
		o := off + i
		for _, w := range p {
			r, v := rows[o:o+32], archsimd.BroadcastFloat32x8(w)
			a = a.Add(load8f(r).Mul(v))
			b = b.Add(load8f(r[8:]).Mul(v))
			c = c.Add(load8f(r[16:]).Mul(v))
			d = d.Add(load8f(r[24:]).Mul(v))
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
			a = a.Add(load8f(r).Mul(v))
			b = b.Add(load8f(r[8:]).Mul(v))
			o += stride
		}
		store8f(out[i:], a)
		store8f(out[i+8:], b)
	}
	if i < n {
		a, o := load8f(out[i:]), off+i
		for _, w := range p {
			a = a.Add(load8f(rows[o : o+8]).Mul(archsimd.BroadcastFloat32x8(w)))
			o += stride
		}
		store8f(out[i:], a)
	}
	return n
}

// attnAxpyVec adds a·x to y for y's leading multiple of 8 and returns how
// many elements it did (axpyVec without its tail or call checks).
func attnAxpyVec(y []float32, a float32, x []float32) int {
	n := len(y) &^ 7
	if !useSIMD || !simdOK {
		return 0
	}
	x = x[:len(y)]
	v := archsimd.BroadcastFloat32x8(a)
	for i := 0; i < n; i += 8 {
		store8f(y[i:], load8f(y[i:]).Add(load8f(x[i:]).Mul(v)))
	}
	return n
}
