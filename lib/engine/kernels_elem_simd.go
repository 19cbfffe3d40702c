//go:build goexperiment.simd && amd64

package engine

import (
	"math"
	"simd/archsimd"
	"slices"
)

// Vector twins of the elementwise kernels in kernels_elem.go. float64 work
// runs four lanes (AVX2), float32 work eight; each lane does the scalar
// body's operations in its order, and tails go to the scalar body.

type f64x4 = archsimd.Float64x4

func bc4(v float64) f64x4 { return archsimd.BroadcastFloat64x4(v) }

func load4(f []float32) f64x4 { return archsimd.LoadFloat32x4((*[4]float32)(f[:4])).ConvertToFloat64() }

func store4(f []float32, v f64x4) { v.ConvertToFloat32().Store((*[4]float32)(f[:4])) }

func load8f(f []float32) archsimd.Float32x8 { return archsimd.LoadFloat32x8((*[8]float32)(f[:8])) }

func store8f(f []float32, v archsimd.Float32x8) { v.Store((*[8]float32)(f[:8])) }

// neg4 is −x, flipping the sign bit as Go's unary minus does.
func neg4(x f64x4) f64x4 {
	return x.AsUint64x4().Xor(archsimd.BroadcastUint64x4(1 << 63)).AsFloat64x4()
}

// exp4x2 is exp64 on two vectors of four lanes: two independent
// dependency chains keep the FMA units busy.
func exp4x2(x, x2 f64x4) (f64x4, f64x4) {
	l2e, rnd := bc4(expLog2e), bc4(expRound)
	t, t2 := x.MulAdd(l2e, rnd), x2.MulAdd(l2e, rnd)
	k, k2 := t.Sub(rnd), t2.Sub(rnd)
	hi, lo := bc4(-expLn2Hi), bc4(-expLn2Lo)
	r, r2 := k.MulAdd(hi, x), k2.MulAdd(hi, x2)
	r, r2 = k.MulAdd(lo, r), k2.MulAdd(lo, r2)
	c1 := bc4(expPoly[1])
	p := bc4(expPoly[0]).MulAdd(r, c1)
	p2 := bc4(expPoly[0]).MulAdd(r2, c1)
	for _, c := range expPoly[2:] {
		cv := bc4(c)
		p, p2 = p.MulAdd(r, cv), p2.MulAdd(r2, cv)
	}
	return expFinish(x, t, p), expFinish(x2, t2, p2)
}

// expFinish scales the polynomial p by 2^k (k in t's low bits) and sets
// the lanes outside exp64's range.
func expFinish(x, t, p f64x4) f64x4 {
	y := p.Mul(t.AsUint64x4().Add(archsimd.BroadcastUint64x4(1023)).ShiftAllLeft(52).AsFloat64x4())
	y = bc4(math.Inf(1)).Merge(y, x.Greater(bc4(expHi)))
	return f64x4{}.Merge(y, x.Less(bc4(expLo)))
}

// exp4 is exp64 on four lanes (for a loop's last four).
func exp4(x f64x4) f64x4 {
	y, _ := exp4x2(x, x)
	return y
}

// max32Vec is the largest of x. Unlike Go's max it ignores NaN and does
// not order −0 below +0, which changes nothing softmax32 computes: a NaN
// score makes the sum and so every output NaN either way, and s − (±0)
// has the same exponential. Sixteen lanes where the CPU has AVX-512
// (max16Vec: attention's score rows and the loss's 150k-logit rows alike),
// eight otherwise.
func max32Vec(x []float32) (float32, bool) {
	if m, ok := max16Vec(x); ok {
		return m, true
	}
	if !useSIMD || len(x) < 8 {
		return 0, false
	}
	m := load8f(x)
	i := 8
	for ; i+8 <= len(x); i += 8 {
		m = m.Max(load8f(x[i:]))
	}
	var l [8]float32
	m.Store(&l)
	archsimd.ClearAVXUpperBits() // before the scalar float code (docs/engine-elementwise.md, "VZEROUPPER")
	mx := slices.Max(l[:])
	for _, v := range x[i:] {
		mx = max(mx, v)
	}
	return mx, true
}

func scaleVec(x []float32, a float32) bool {
	if !useSIMD {
		return false
	}
	av := archsimd.BroadcastFloat32x8(a)
	i := 0
	for ; i+8 <= len(x); i += 8 {
		store8f(x[i:], load8f(x[i:]).Mul(av))
	}
	archsimd.ClearAVXUpperBits() // before the scalar tail (docs/engine-elementwise.md, "VZEROUPPER")
	for ; i < len(x); i++ {
		x[i] *= a
	}
	return true
}

func expScaledVec(dst []float64, logits []float32, invT, mx float64) bool {
	if !useSIMD || !expVec {
		return false
	}
	i := 0
	if avx512 {
		i = expScaled8(dst, logits, invT, mx)
	}
	dst = dst[:len(logits)]
	if expScaled4Loop {
		i = expScaled4(dst, logits, invT, mx, i)
	} else {
		it, m := bc4(invT), bc4(mx)
		ld := func(i int) f64x4 { return load4(logits[i:]).Mul(it).Sub(m) }
		st := func(i int, e f64x4) { e.Store((*[4]float64)(dst[i : i+4])) }
		for ; i+8 <= len(logits); i += 8 {
			a, b := exp4x2(ld(i), ld(i+4))
			st(i, a)
			st(i+4, b)
		}
		if i+4 <= len(logits) {
			st(i, exp4(ld(i)))
			i += 4
		}
	}
	archsimd.ClearAVXUpperBits()
	for ; i < len(logits); i++ {
		dst[i] = exp64(float64(float64(logits[i])*invT) - mx)
	}
	return true
}

// expScaled4Loop has expScaledVec and expScaledSumVec run their 4-lane
// loops in functions of their own (expScaled4, expSum4): 5.2-5.4x less
// time an exponential on an AVX2 host, the same bits. Token-paired
// (FUSE_SWITCH=exp4) the decode gained 1.042 wall, 1.021 CPU (the pick's
// share of a token caps the CPU gain); on, as the fix of a known
// pattern at no cost. AVX-512 hosts run neither loop on a long row.
var expScaled4Loop = true

// expScaled4 is expScaledVec's 4-lane loop from i, returning where it
// stopped (fewer than four left): a function of its own so that no scalar
// float is live across the loop (docs/engine-elementwise.md,
// "VZEROUPPER"). Inline in expScaledVec, invT and mx, which its scalar
// tail reads, were reloaded with SSE moves every pass beside the 256-bit
// code: a 150k-logit pick's exponentials took 20.8 CPU-ns each on an AVX2
// host (AMD EPYC under KVM), most of a pick's 3.4 ms.
func expScaled4(dst []float64, logits []float32, invT, mx float64, i int) int {
	it, m := bc4(invT), bc4(mx)
	ld := func(i int) f64x4 { return load4(logits[i:]).Mul(it).Sub(m) }
	st := func(i int, e f64x4) { e.Store((*[4]float64)(dst[i : i+4])) }
	if exp4Chains && expAVX2 && len(logits)-i >= 32 {
		n := (len(logits) - i) &^ 31
		expTabReady()
		exp64ScaledAVX2(&dst[i], &logits[i], n, invT, mx)
		i += n
	}
	if exp4Chains {
		for ; i+16 <= len(logits); i += 16 {
			a, b, c, d := exp4x4(ld(i), ld(i+4), ld(i+8), ld(i+12))
			st(i, a)
			st(i+4, b)
			st(i+8, c)
			st(i+12, d)
		}
	}
	for ; i+8 <= len(logits); i += 8 {
		a, b := exp4x2(ld(i), ld(i+4))
		st(i, a)
		st(i+4, b)
	}
	if i+4 <= len(logits) {
		st(i, exp4(ld(i)))
		i += 4
	}
	return i
}

func siluMulVec(h, g, u []float32) bool {
	if !useSIMD || !expVec {
		return false
	}
	n := len(g)
	h, u = h[:n], u[:n]
	// silu(x)·u: x / (1 + e^−x) rounded to float32, times u in float32.
	st := func(j int, x, e f64x4) {
		s := x.Div(bc4(1).Add(e)).ConvertToFloat32()
		s.Mul(archsimd.LoadFloat32x4((*[4]float32)(u[j : j+4]))).Store((*[4]float32)(h[j : j+4]))
	}
	j := 0
	if avx512 {
		j = siluMul8(h, g, u)
	}
	for ; j+8 <= n; j += 8 {
		x0, x1 := load4(g[j:]), load4(g[j+4:])
		e0, e1 := exp4x2(neg4(x0), neg4(x1))
		st(j, x0, e0)
		st(j+4, x1, e1)
	}
	if j+4 <= n {
		x := load4(g[j:])
		st(j, x, exp4(neg4(x)))
		j += 4
	}
	archsimd.ClearAVXUpperBits() // before the scalar tail (docs/engine-elementwise.md, "VZEROUPPER")
	for ; j < n; j++ {
		h[j] = silu(g[j]) * u[j]
	}
	return true
}

func siluMulBackwardVec(dg, du, g, u []float32) bool {
	if !useSIMD || !expVec {
		return false
	}
	n := len(dg)
	du, g, u = du[:n], g[:n], u[:n]
	// The scalar body's operations on four lanes given e = e^−x.
	st := func(j int, x, e f64x4) {
		one := bc4(1)
		dh := load4(dg[j:])
		store4(du[j:], dh.Mul(x.Div(one.Add(e)).ConvertToFloat32().ConvertToFloat64()))
		s := one.Div(one.Add(e))
		grad := s.Mul(one.Add(x.Mul(one.Sub(s))))
		store4(dg[j:], dh.Mul(load4(u[j:])).Mul(grad))
	}
	j := 0
	if avx512 {
		j = siluMulBackward8(dg, du, g, u)
	}
	for ; j+8 <= n; j += 8 {
		x0, x1 := load4(g[j:]), load4(g[j+4:])
		e0, e1 := exp4x2(neg4(x0), neg4(x1))
		st(j, x0, e0)
		st(j+4, x1, e1)
	}
	if j+4 <= n {
		x := load4(g[j:])
		st(j, x, exp4(neg4(x)))
		j += 4
	}
	archsimd.ClearAVXUpperBits() // before the scalar tail (docs/engine-elementwise.md, "VZEROUPPER")
	if j < n {
		siluMulBackwardScalar(dg[j:], du[j:], g[j:], u[j:])
	}
	return true
}

func sumSquaresVec(x []float32) (float64, bool) {
	if !useSIMD || len(x) < 8 {
		return 0, false
	}
	var s [8]float64
	n8 := len(x) &^ 7
	if avx512 {
		// Lane l adds x[i]² for i ≡ l (mod 8) as the two halves below do.
		var a f64x8
		for i := 0; i < n8; i += 8 {
			v := load8(x[i:])
			a = a.Add(v.Mul(v))
		}
		a.Store(&s)
	} else {
		var a, b f64x4
		for i := 0; i < n8; i += 8 {
			lo, hi := load4(x[i:]), load4(x[i+4:])
			a, b = a.Add(lo.Mul(lo)), b.Add(hi.Mul(hi))
		}
		a.Store((*[4]float64)(s[:4]))
		b.Store((*[4]float64)(s[4:]))
	}
	archsimd.ClearAVXUpperBits() // before the scalar tail (docs/engine-elementwise.md, "VZEROUPPER")
	for _, v := range x[n8:] {
		s[0] += float64(float64(v) * float64(v))
	}
	return sum8(&s), true
}

func normSumsVec(dOut, x, weight []float32) (float64, float64, bool) {
	n := len(x)
	if !useSIMD || n < 8 {
		return 0, 0, false
	}
	dOut, weight = dOut[:n], weight[:n]
	var sa, sb, da, db f64x4
	n8 := n &^ 7
	for i := 0; i < n8; i += 8 {
		lo, hi := load4(x[i:]), load4(x[i+4:])
		sa, sb = sa.Add(lo.Mul(lo)), sb.Add(hi.Mul(hi))
		da = da.Add(load4(weight[i:]).Mul(load4(dOut[i:])).Mul(lo))
		db = db.Add(load4(weight[i+4:]).Mul(load4(dOut[i+4:])).Mul(hi))
	}
	var s, d [8]float64
	sa.Store((*[4]float64)(s[:4]))
	sb.Store((*[4]float64)(s[4:]))
	da.Store((*[4]float64)(d[:4]))
	db.Store((*[4]float64)(d[4:]))
	archsimd.ClearAVXUpperBits() // before the scalar tail (docs/engine-elementwise.md, "VZEROUPPER")
	for i := n8; i < n; i++ {
		v := float64(x[i])
		s[0] += float64(v * v)
		d[0] += float64(float64(float64(weight[i])*float64(dOut[i])) * v)
	}
	return sum8(&s), sum8(&d), true
}

func normGradVec(dx, dOut, x, weight []float32, s, k float64) bool {
	if !useSIMD {
		return false
	}
	n := len(x)
	dOut, weight, dx = dOut[:n], weight[:n], dx[:n]
	sv, kv := bc4(s), bc4(k)
	i := 0
	for ; i+4 <= n; i += 4 {
		g := sv.Mul(load4(weight[i:])).Mul(load4(dOut[i:])).Sub(kv.Mul(load4(x[i:]))).ConvertToFloat32()
		q := (*[4]float32)(dx[i : i+4])
		archsimd.LoadFloat32x4(q).Add(g).Store(q)
	}
	archsimd.ClearAVXUpperBits() // before the scalar tail (docs/engine-elementwise.md, "VZEROUPPER")
	for ; i < n; i++ {
		dx[i] += float32(float64(s*float64(weight[i])*float64(dOut[i])) - float64(k*float64(x[i])))
	}
	return true
}

func scaleMulVec(out, x []float32, scale float32, weight []float32) bool {
	if !useSIMD {
		return false
	}
	n := len(x)
	out, weight = out[:n], weight[:n]
	i := 0
	if avx512 {
		sc := archsimd.BroadcastFloat32x16(scale)
		ld := func(f []float32) archsimd.Float32x16 { return archsimd.LoadFloat32x16((*[16]float32)(f[:16])) }
		for ; i+16 <= n; i += 16 {
			ld(x[i:]).Mul(sc).Mul(ld(weight[i:])).Store((*[16]float32)(out[i : i+16]))
		}
	}
	sc := archsimd.BroadcastFloat32x8(scale)
	for ; i+8 <= n; i += 8 {
		store8f(out[i:], load8f(x[i:]).Mul(sc).Mul(load8f(weight[i:])))
	}
	archsimd.ClearAVXUpperBits() // before the scalar tail (docs/engine-elementwise.md, "VZEROUPPER")
	for ; i < n; i++ {
		out[i] = float32(x[i]*scale) * weight[i]
	}
	return true
}

func widenBF16Vec(dst []float32, h []uint16) bool {
	if !useSIMD {
		return false
	}
	dst = dst[:len(h)]
	j := 0
	for ; j+8 <= len(h); j += 8 {
		store8f(dst[j:], widen8(h[j:j+8]))
	}
	archsimd.ClearAVXUpperBits() // before the scalar tail (docs/engine-elementwise.md, "VZEROUPPER")
	for ; j < len(h); j++ {
		dst[j] = bf16(h[j])
	}
	return true
}

func ropeRotateVec(a, b, cos, sin []float32, inverse bool) bool {
	if !useSIMD || len(a) < 8 {
		return false
	}
	n := len(a)
	b, cos, sin = b[:n], cos[:n], sin[:n]
	i := 0
	for ; i+8 <= n; i += 8 {
		x1, x2, c, s := load8f(a[i:]), load8f(b[i:]), load8f(cos[i:]), load8f(sin[i:])
		if inverse {
			store8f(a[i:], x1.Mul(c).Add(x2.Mul(s)))
			store8f(b[i:], x2.Mul(c).Sub(x1.Mul(s)))
		} else {
			store8f(a[i:], x1.Mul(c).Sub(x2.Mul(s)))
			store8f(b[i:], x2.Mul(c).Add(x1.Mul(s)))
		}
	}
	archsimd.ClearAVXUpperBits() // before the scalar tail (docs/engine-elementwise.md, "VZEROUPPER")
	if i < n {
		ropeRotateScalar(a[i:], b[i:], cos[i:], sin[i:], inverse)
	}
	return true
}

func adamUpdateVec(w, m, v, grad []float32, a adamConsts) bool {
	if !useSIMD {
		return false
	}
	n := len(grad)
	w, m, v = w[:n], m[:n], v[:n]
	coef, b1, b2, nb1, nb2 := bc4(a.coef), bc4(a.b1), bc4(a.b2), bc4(1-a.b1), bc4(1-a.b2)
	decay, step, bc2, eps := bc4(a.decay), bc4(a.stepSize), bc4(a.bc2), bc4(a.eps)
	i := 0
	for ; i+4 <= n; i += 4 {
		g := load4(grad[i:]).Mul(coef)
		mi := b1.Mul(load4(m[i:])).Add(nb1.Mul(g))
		vi := b2.Mul(load4(v[i:])).Add(nb2.Mul(g).Mul(g))
		wi := load4(w[i:]).Mul(decay)
		wi = wi.Sub(step.Mul(mi).Div(vi.Sqrt().Div(bc2).Add(eps)))
		store4(w[i:], wi)
		store4(m[i:], mi)
		store4(v[i:], vi)
	}
	archsimd.ClearAVXUpperBits() // before the scalar tail (docs/engine-elementwise.md, "VZEROUPPER")
	if i < n {
		adamUpdateScalar(w[i:], m[i:], v[i:], grad[i:], a)
	}
	return true
}
