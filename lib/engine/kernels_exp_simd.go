//go:build goexperiment.simd && amd64

package engine

import (
	"math"
	"simd/archsimd"
)

// The loss's exponentials (two passes over a 150k vocabulary per token,
// a quarter of a training step's CPU at 512 tokens before this file) on
// eight float64 lanes where the CPU has AVX-512, four (AVX2 with FMA)
// otherwise. Each lane computes exp64's operations in its order, so the
// bits are the scalar body's.

// expVec reports whether the exp kernels' vector bodies can run: they
// need fused multiply-add, which exp64 uses.
var expVec = archsimd.X86.AVX2() && archsimd.X86.FMA()

type f64x8 = archsimd.Float64x8

func bc8(v float64) f64x8 { return archsimd.BroadcastFloat64x8(v) }

// load8 widens eight float32s to float64.
func load8(f []float32) f64x8 { return load8f(f).ConvertToFloat64() }

func store8(f []float32, v f64x8) { store8f(f, v.ConvertToFloat32()) }

// exp8x2 is exp64 on two vectors of eight lanes (two dependency chains).
func exp8x2(x, x2 f64x8) (f64x8, f64x8) {
	l2e, rnd := bc8(expLog2e), bc8(expRound)
	t, t2 := x.MulAdd(l2e, rnd), x2.MulAdd(l2e, rnd)
	k, k2 := t.Sub(rnd), t2.Sub(rnd)
	hi, lo := bc8(-expLn2Hi), bc8(-expLn2Lo)
	r, r2 := k.MulAdd(hi, x), k2.MulAdd(hi, x2)
	r, r2 = k.MulAdd(lo, r), k2.MulAdd(lo, r2)
	c1 := bc8(expPoly[1])
	p := bc8(expPoly[0]).MulAdd(r, c1)
	p2 := bc8(expPoly[0]).MulAdd(r2, c1)
	for _, c := range expPoly[2:] {
		cv := bc8(c)
		p, p2 = p.MulAdd(r, cv), p2.MulAdd(r2, cv)
	}
	return expFinish8(x, t, p), expFinish8(x2, t2, p2)
}

// expFinish8 is expFinish on eight lanes.
func expFinish8(x, t, p f64x8) f64x8 {
	y := p.Mul(t.AsUint64x8().Add(archsimd.BroadcastUint64x8(1023)).ShiftAllLeft(52).AsFloat64x8())
	y = bc8(math.Inf(1)).Merge(y, x.Greater(bc8(expHi)))
	return f64x8{}.Merge(y, x.Less(bc8(expLo)))
}

// expScaledSumVec is expScaledSum: lane l of the accumulators adds the
// exponentials of i ≡ l (mod 8) in ascending i.
func expScaledSumVec(logits []float32, invT, mx float64) (float64, bool) {
	if !useSIMD || !expVec {
		return 0, false
	}
	var s [8]float64
	n16 := len(logits) &^ 15
	if avx512 {
		expSum8(logits[:n16], invT, mx, &s)
	} else if expScaled4Loop {
		expSum4(logits[:n16], invT, mx, &s)
	} else {
		it, m := bc4(invT), bc4(mx)
		ld := func(i int) f64x4 { return load4(logits[i:]).Mul(it).Sub(m) }
		var lo, hi f64x4
		for i := 0; i < n16; i += 8 {
			a, b := exp4x2(ld(i), ld(i+4))
			lo, hi = lo.Add(a), hi.Add(b)
		}
		lo.Store((*[4]float64)(s[:4]))
		hi.Store((*[4]float64)(s[4:]))
	}
	// Clear the vector registers' upper halves before scalar code: Go's
	// scalar float code is SSE, which runs many times slower while they
	// are dirty (attention's rows, 1 to 256 long, took 7× the time
	// without it on a Xeon with AVX-512).
	archsimd.ClearAVXUpperBits()
	// The last 8..15 fill the lanes once more; what is left goes to lane 0.
	n8 := len(logits) &^ 7
	for i := n16; i < n8; i++ {
		s[i-n16] += exp64(float64(float64(logits[i])*invT) - mx)
	}
	for _, v := range logits[n8:] {
		s[0] += exp64(float64(float64(v)*invT) - mx)
	}
	return sum8(&s), true
}

// expSum4 is expSum8 on four lanes, where the CPU has no AVX-512: a
// function of its own for the same reason (expScaled4Loop). It adds to
// s's lanes (the generated kernel, which takes the first multiple of 32,
// leaves its sums there).
func expSum4(logits []float32, invT, mx float64, s *[8]float64) {
	i := 0
	if exp4Chains && expAVX2 && len(logits) >= 32 {
		i = len(logits) &^ 31
		expTabReady()
		exp64SumAVX2(&logits[0], i, invT, mx, &s[0])
	}
	it, m := bc4(invT), bc4(mx)
	ld := func(i int) f64x4 { return load4(logits[i:]).Mul(it).Sub(m) }
	lo, hi := archsimd.LoadFloat64x4((*[4]float64)(s[:4])), archsimd.LoadFloat64x4((*[4]float64)(s[4:]))
	if exp4Chains {
		for ; i+16 <= len(logits); i += 16 {
			a, b, c, d := exp4x4(ld(i), ld(i+4), ld(i+8), ld(i+12))
			lo, hi = lo.Add(a), hi.Add(b)
			lo, hi = lo.Add(c), hi.Add(d)
		}
	}
	for ; i+8 <= len(logits); i += 8 {
		a, b := exp4x2(ld(i), ld(i+4))
		lo, hi = lo.Add(a), hi.Add(b)
	}
	lo.Store((*[4]float64)(s[:4]))
	hi.Store((*[4]float64)(s[4:]))
}

// expSum8 stores in s the eight lanes' sums of exp64(logits[i]·invT − mx)
// over a multiple of 16 logits. A function of its own so that no scalar
// stays live across the loop: the compiler reloads those with SSE moves,
// which the dirty upper halves of the vector registers slow down.
func expSum8(logits []float32, invT, mx float64, s *[8]float64) {
	it, m := bc8(invT), bc8(mx)
	ld := func(i int) f64x8 { return load8(logits[i:]).Mul(it).Sub(m) }
	var acc f64x8
	for i := 0; i+16 <= len(logits); i += 16 {
		a, b := exp8x2(ld(i), ld(i+8))
		acc = acc.Add(a).Add(b)
	}
	acc.Store(s)
}

// sumLanesVec is sumLanes: lane l of the accumulators adds the x_i of
// i ≡ l (mod 8) in ascending i.
func sumLanesVec(x []float64) (float64, bool) {
	if !useSIMD || !expVec {
		return 0, false
	}
	var s [8]float64
	n8 := len(x) &^ 7
	ld := func(i int) f64x4 { return archsimd.LoadFloat64x4((*[4]float64)(x[i : i+4])) }
	var lo, hi f64x4
	for i := 0; i < n8; i += 8 {
		lo, hi = lo.Add(ld(i)), hi.Add(ld(i+4))
	}
	lo.Store((*[4]float64)(s[:4]))
	hi.Store((*[4]float64)(s[4:]))
	archsimd.ClearAVXUpperBits() // before the scalar tail (docs/engine-elementwise.md, "VZEROUPPER")
	for _, v := range x[n8:] {
		s[0] += v
	}
	return sum8(&s), true
}

// expScaledKeepVec is expScaledKeep in one pass where the CPU has
// AVX-512, or AVX2 with exp4Chains: each sixteen exponentials are stored
// and added to the lanes while in registers, in sumLanes' order (lane l
// adds i ≡ l (mod 8) in ascending i), instead of a second pass reading a
// 150k-logit row's 1.2 MB of them back.
func expScaledKeepVec(dst []float64, logits []float32, invT, mx float64) (float64, bool) {
	if !useSIMD || !expVec || !avx512 && !exp4Chains {
		return 0, false
	}
	dst = dst[:len(logits)]
	var s [8]float64
	n16 := len(logits) &^ 15
	if avx512 {
		expKeep8(dst[:n16], logits[:n16], invT, mx, &s)
	} else {
		expKeep4(dst[:n16], logits[:n16], invT, mx, &s)
	}
	archsimd.ClearAVXUpperBits() // before the scalar code (docs/engine-elementwise.md, "VZEROUPPER")
	expScaled(dst[n16:], logits[n16:], invT, mx)
	n8 := len(logits) &^ 7
	for i := n16; i < n8; i++ {
		s[i-n16] += dst[i]
	}
	for _, v := range dst[n8:] {
		s[0] += v
	}
	return sum8(&s), true
}

// exp4Chains has the 4-lane exponential loops (expScaled4, expSum4,
// expKeep4) run four vectors at a time (exp4x4) and expScaledKeepVec run
// fused on AVX2 as it does on AVX-512: the degree-13 Horner chain is
// latency-bound, two chains of four lanes left the FMA units idle most of
// the time. The same operations per lane, so the same bits. On the Zen 3
// VM (BenchmarkExp4Chains, one core, interleaved, load 0.9) a 151936-word
// log-sum-exp took 1.60x less CPU, the loss's row gradient 1.34x; with
// expAVX2 as well 1.91x and 1.63x. On by default (it runs where expVec
// holds: AVX2 and FMA).
var exp4Chains = true

// exp4x4 is exp64 on four vectors of four lanes: four independent
// dependency chains (exp4x2's operations lane for lane).
func exp4x4(x0, x1, x2, x3 f64x4) (f64x4, f64x4, f64x4, f64x4) {
	l2e, rnd := bc4(expLog2e), bc4(expRound)
	t0, t1, t2, t3 := x0.MulAdd(l2e, rnd), x1.MulAdd(l2e, rnd), x2.MulAdd(l2e, rnd), x3.MulAdd(l2e, rnd)
	k0, k1, k2, k3 := t0.Sub(rnd), t1.Sub(rnd), t2.Sub(rnd), t3.Sub(rnd)
	hi, lo := bc4(-expLn2Hi), bc4(-expLn2Lo)
	r0, r1, r2, r3 := k0.MulAdd(hi, x0), k1.MulAdd(hi, x1), k2.MulAdd(hi, x2), k3.MulAdd(hi, x3)
	r0, r1, r2, r3 = k0.MulAdd(lo, r0), k1.MulAdd(lo, r1), k2.MulAdd(lo, r2), k3.MulAdd(lo, r3)
	c0, c1 := bc4(expPoly[0]), bc4(expPoly[1])
	p0, p1, p2, p3 := c0.MulAdd(r0, c1), c0.MulAdd(r1, c1), c0.MulAdd(r2, c1), c0.MulAdd(r3, c1)
	for _, c := range expPoly[2:] {
		cv := bc4(c)
		p0, p1, p2, p3 = p0.MulAdd(r0, cv), p1.MulAdd(r1, cv), p2.MulAdd(r2, cv), p3.MulAdd(r3, cv)
	}
	return expFinish(x0, t0, p0), expFinish(x1, t1, p1), expFinish(x2, t2, p2), expFinish(x3, t3, p3)
}

// expKeep4 is expKeep8 on four lanes (AVX2): it stores the exponentials
// of a multiple of 16 logits and adds them to s's eight lanes.
func expKeep4(dst []float64, logits []float32, invT, mx float64, s *[8]float64) {
	dst = dst[:len(logits)]
	i := 0
	if expAVX2 && len(logits) >= 32 {
		i = len(logits) &^ 31
		expTabReady()
		exp64KeepAVX2(&dst[0], &logits[0], i, invT, mx, &s[0])
	}
	it, m := bc4(invT), bc4(mx)
	ld := func(i int) f64x4 { return load4(logits[i:]).Mul(it).Sub(m) }
	st := func(i int, e f64x4) { e.Store((*[4]float64)(dst[i : i+4])) }
	lo, hi := archsimd.LoadFloat64x4((*[4]float64)(s[:4])), archsimd.LoadFloat64x4((*[4]float64)(s[4:]))
	for ; i+16 <= len(logits); i += 16 {
		a, b, c, d := exp4x4(ld(i), ld(i+4), ld(i+8), ld(i+12))
		st(i, a)
		st(i+4, b)
		st(i+8, c)
		st(i+12, d)
		lo, hi = lo.Add(a), hi.Add(b)
		lo, hi = lo.Add(c), hi.Add(d)
	}
	lo.Store((*[4]float64)(s[:4]))
	hi.Store((*[4]float64)(s[4:]))
}

// expKeep8 is expScaled8 over a multiple of 16 logits that also stores in
// s the eight lanes' sums of what it wrote.
func expKeep8(dst []float64, logits []float32, invT, mx float64, s *[8]float64) {
	dst = dst[:len(logits)]
	it, m := bc8(invT), bc8(mx)
	ld := func(i int) f64x8 { return load8(logits[i:]).Mul(it).Sub(m) }
	var acc f64x8
	for i := 0; i+16 <= len(logits); i += 16 {
		a, b := exp8x2(ld(i), ld(i+8))
		a.Store((*[8]float64)(dst[i : i+8]))
		b.Store((*[8]float64)(dst[i+8 : i+16]))
		acc = acc.Add(a).Add(b)
	}
	acc.Store(s)
}

func scaleExpsVec(row []float32, e []float64, f float64) bool {
	if !useSIMD || !expVec {
		return false
	}
	e = e[:len(row)]
	i := 0
	if avx512 {
		fv := bc8(f)
		for ; i+8 <= len(row); i += 8 {
			store8(row[i:], archsimd.LoadFloat64x8((*[8]float64)(e[i:i+8])).Mul(fv))
		}
	}
	fv := bc4(f)
	for ; i+4 <= len(row); i += 4 {
		store4(row[i:], archsimd.LoadFloat64x4((*[4]float64)(e[i:i+4])).Mul(fv))
	}
	archsimd.ClearAVXUpperBits() // before the scalar tail (docs/engine-elementwise.md, "VZEROUPPER")
	for ; i < len(row); i++ {
		row[i] = float32(e[i] * f)
	}
	return true
}

// expScaled8 is expScaledVec on eight lanes, sixteen elements at a time;
// it returns how many it did (the 4-lane loop takes the rest, so that a
// short row does not leave up to 15 to the scalar body).
func expScaled8(dst []float64, logits []float32, invT, mx float64) int {
	dst = dst[:len(logits)]
	it, m := bc8(invT), bc8(mx)
	ld := func(i int) f64x8 { return load8(logits[i:]).Mul(it).Sub(m) }
	i := 0
	for ; i+16 <= len(logits); i += 16 {
		a, b := exp8x2(ld(i), ld(i+8))
		a.Store((*[8]float64)(dst[i : i+8]))
		b.Store((*[8]float64)(dst[i+8 : i+16]))
	}
	return i
}

// neg8 is −x on eight lanes, flipping the sign bit as Go's unary minus
// does.
func neg8(x f64x8) f64x8 {
	return x.AsUint64x8().Xor(archsimd.BroadcastUint64x8(1 << 63)).AsFloat64x8()
}

// siluMul8 is siluMulVec on eight float64 lanes (SwiGLU, 4% of a bf16
// prefill's CPU on four), returning how many it did (all but the last
// len(g) mod 16): each lane does silu's operations in its order, so the
// bits are the scalar body's.
func siluMul8(h, g, u []float32) int {
	st := func(j int, x, e f64x8) {
		s := x.Div(bc8(1).Add(e)).ConvertToFloat32()
		store8f(h[j:], s.Mul(load8f(u[j:])))
	}
	return siluLanes8(g, st)
}

// siluLanes8 runs st(j, x, e^−x) on each eight lanes x = g[j:j+8] of
// every whole sixteen of g, two exponentials at a time, and returns how
// many it did.
func siluLanes8(g []float32, st func(j int, x, e f64x8)) int {
	j := 0
	for ; j+16 <= len(g); j += 16 {
		x0, x1 := load8(g[j:]), load8(g[j+8:])
		e0, e1 := exp8x2(neg8(x0), neg8(x1))
		st(j, x0, e0)
		st(j+8, x1, e1)
	}
	return j
}

// siluMulBackward8 is siluMulBackwardVec on eight lanes, returning how
// many it did (all but the last len(dg) mod 16).
func siluMulBackward8(dg, du, g, u []float32) int {
	one := bc8(1)
	st := func(j int, x, e f64x8) {
		dh := load8(dg[j:])
		store8(du[j:], dh.Mul(x.Div(one.Add(e)).ConvertToFloat32().ConvertToFloat64()))
		s := one.Div(one.Add(e))
		grad := s.Mul(one.Add(x.Mul(one.Sub(s))))
		store8(dg[j:], dh.Mul(load8(u[j:])).Mul(grad))
	}
	return siluLanes8(g[:len(dg)], st)
}
