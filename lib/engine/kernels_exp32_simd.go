//go:build goexperiment.simd && amd64

package engine

import (
	"math"
	"simd/archsimd"
)

// Vector twins of exp32: sixteen float32 lanes with AVX-512 (the
// generated attnExpSum16), eight with AVX2 and FMA. Each lane does
// exp32's operations in its order, so the bits are the scalar body's; a
// row's last few go through a masked load and store, never the scalar
// body (fma32 is software on amd64).

// exp8x2f is exp32 on two vectors of eight lanes (AVX2 with FMA).
func exp8x2f(x, x2 archsimd.Float32x8) (archsimd.Float32x8, archsimd.Float32x8) {
	bc := archsimd.BroadcastFloat32x8
	l2e, rnd := bc(exp32Log2e), bc(exp32Round)
	t, t2 := x.MulAdd(l2e, rnd), x2.MulAdd(l2e, rnd)
	k, k2 := t.Sub(rnd), t2.Sub(rnd)
	hi, lo := bc(-exp32Ln2Hi), bc(-exp32Ln2Lo)
	r, r2 := k.MulAdd(hi, x), k2.MulAdd(hi, x2)
	r, r2 = k.MulAdd(lo, r), k2.MulAdd(lo, r2)
	c1 := bc(exp32Poly[1])
	p := bc(exp32Poly[0]).MulAdd(r, c1)
	p2 := bc(exp32Poly[0]).MulAdd(r2, c1)
	for _, c := range exp32Poly[2:] {
		cv := bc(c)
		p, p2 = p.MulAdd(r, cv), p2.MulAdd(r2, cv)
	}
	return exp32Finish8(x, t, p), exp32Finish8(x2, t2, p2)
}

// exp32Finish8 is exp32Finish16 on eight lanes.
func exp32Finish8(x, t, p archsimd.Float32x8) archsimd.Float32x8 {
	bc := archsimd.BroadcastFloat32x8
	y := p.Mul(t.AsUint32x8().Add(archsimd.BroadcastUint32x8(127)).ShiftAllLeft(23).AsFloat32x8())
	y = bc(float32(math.Inf(1))).Merge(y, x.Greater(bc(exp32Hi)))
	return archsimd.Float32x8{}.Merge(y, x.Less(bc(exp32Lo)))
}

// expScores32Vec is expScores32 on sixteen lanes with AVX-512 (exp32,
// widened, stored and summed in one pass), on eight lanes with AVX2 (the
// same in attnExpSum8, or with expSumAVX2 off the exponentials in place,
// then a scalar pass widens and sums); it reports whether it ran.
func expScores32Vec(p []float64, sc []float32, scale, mx float32) (float64, bool) {
	if !useSIMD || !expVec {
		return 0, false
	}
	var s [8]float64
	if avx512 {
		expScores16(p, sc, scale, mx, &s)
		archsimd.ClearAVXUpperBits() // scalar Go float code follows (docs/engine-attention.md, "VZEROUPPER in attention")
		return sum8(&s), true
	}
	if expSumAVX2 {
		expScores8(p, sc, scale, mx, &s)
		archsimd.ClearAVXUpperBits() // scalar Go float code follows (docs/engine-attention.md, "VZEROUPPER in attention")
		return sum8(&s), true
	}
	expScaleShift32x8f(sc, scale, mx)
	archsimd.ClearAVXUpperBits()
	for t, e := range sc { // widened after the clear: SSE code (docs/engine-attention.md, "VZEROUPPER in attention")
		s[t%8] += float64(e)
		if p != nil {
			p[t] = float64(e)
		}
	}
	return sum8(&s), true
}

// expScores16 does expScores32Vec's AVX-512 pass in the generated kernel
// attnExpSum16 (exp32's operations on each lane, the constants held in
// registers; the last 1..31 through masked loads and stores, their
// unused lanes zeroed before they join the sums), leaving the lane sums
// in s and, unless p is nil, the widened numerators in p. The archsimd
// loop it replaces called a 16-lane exp32 every 32 scores, spilling around the
// call, and reloaded its constants each time.
func expScores16(p []float64, sc []float32, scale, mx float32, s *[8]float64) {
	if pp, c, ok := expSumArgs(p, sc, scale, mx, s); ok {
		attnExpSum16(&sc[0], len(sc), pp, &c[0], &s[0])
	}
}

// expSumArgs returns the exp-sum kernels' arguments for the scores sc:
// p's first element (nil without p) and the constants with the row's
// scale and maximum. With no scores it zeroes s and reports false.
func expSumArgs(p []float64, sc []float32, scale, mx float32, s *[8]float64) (*float64, [len(expSumConsts)]float32, bool) {
	c := expSumConsts
	if len(sc) == 0 {
		*s = [8]float64{}
		return nil, c, false
	}
	var pp *float64
	if p != nil {
		pp = &p[:len(sc)][0]
	}
	c[0], c[1], c[14], c[17] = scale, mx, float32(math.Inf(1)), math.Float32frombits(127) // 127: the exponent bias, an integer lane
	return pp, c, true
}

// expSumConsts is attnExpSum16's constants, in internal/asmgen/attn/
// expsum.go's order, but for the row's scale and maximum (0, 1), +Inf (14)
// and the exponent bias (17), which are not Go constants and are set with
// the row's. A literal, laid out as data (a table built by a function is
// code run at every start); 6-13 are exp32Poly, as
// TestExpSumConstsFollowExp32 checks.
var expSumConsts = [18]float32{2: exp32Log2e, exp32Round, -exp32Ln2Hi, -exp32Ln2Lo,
	1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 1.0 / 2, 1, 1, 15: exp32Hi, exp32Lo}

// expScaleShift32x8f sets sc[t] = exp32(float32(sc[t]·scale) − mx) on
// eight lanes (AVX2), the last 1..15 through masked loads and stores.
func expScaleShift32x8f(sc []float32, scale, mx float32) {
	a, m := archsimd.BroadcastFloat32x8(scale), archsimd.BroadcastFloat32x8(mx)
	ld := func(s []float32) archsimd.Float32x8 { return loadPart8f(s).Mul(a).Sub(m) }
	for i := 0; i < len(sc); i += 16 {
		lo, hi := sc[i:], sc[min(i+8, len(sc)):]
		x, y := exp8x2f(ld(lo), ld(hi))
		storePart8f(x, lo)
		storePart8f(y, hi)
	}
}
