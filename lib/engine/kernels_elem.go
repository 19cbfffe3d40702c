package engine

import "math"

// Elementwise kernels: the engine's own exp, the activation, norm and
// rotary loops, and the optimizer's update. Each has a plain Go body here
// (the reference) and a vector twin in kernels_elem_simd.go that performs
// the same IEEE operations per element in the same order, so both give the
// same bits; where a loop reduces (RMSNorm's sums), the order is fixed as
// eight lane-strided partial sums added in a fixed tree (sum8), which
// vectors compute without reordering anything.

// exp64's constants. The argument is reduced as x = k·ln2 + r with k an
// integer and |r| ≤ ln2/2 (Cody-Waite: ln2Hi has enough trailing zero bits
// that k·ln2Hi is exact), e^r is the Taylor polynomial of degree 13 (its
// truncation error is below 5e-18 on that interval) evaluated by Horner's
// rule, and 2^k is built in the exponent bits.
const (
	expLog2e = 1.4426950408889634
	expLn2Hi = 6.93147180369123816490e-01 // 0x3fe62e42fee00000
	expLn2Lo = 1.90821492927058770002e-10
	// expRound rounds a float64 of magnitude < 2^51 to an integer when
	// added and subtracted; the integer sits in the sum's low mantissa bits.
	expRound = 0x1.8p52
	// exp64 returns +Inf above expHi and 0 below expLo, where 2^k would
	// leave the normal range.
	expHi = 709.0
	expLo = -708.0
)

// expPoly holds 1/n! for n = 13 down to 0, Horner's order.
var expPoly = [14]float64{
	1.0 / 6227020800, 1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320,
	1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 1.0 / 2, 1, 1,
}

// exp64 is the engine's exponential: within 2 ulp of e^x (TestExp64Accuracy
// measures it), +Inf for x > 709 and 0 for x < −708 (math.Exp has a
// little more range; nothing in the engine needs it), NaN for NaN. Every
// step is one IEEE operation, a fused multiply-add (math.FMA, one
// rounding) wherever a product meets a sum, so the vector kernels, whose
// FMA instructions round the same way, compute the same bits; math.Exp,
// which vectors cannot reproduce, is not used on any path the vector
// kernels also take.
func exp64(x float64) float64 {
	switch {
	case x > expHi:
		return math.Inf(1)
	case x < expLo:
		return 0
	}
	t := math.FMA(x, expLog2e, expRound)
	k := t - expRound
	r := math.FMA(k, -expLn2Hi, x)
	r = math.FMA(k, -expLn2Lo, r)
	// Horner's rule written out: a third faster than the loop.
	c := &expPoly
	p := math.FMA(c[0], r, c[1])
	p = math.FMA(p, r, c[2])
	p = math.FMA(p, r, c[3])
	p = math.FMA(p, r, c[4])
	p = math.FMA(p, r, c[5])
	p = math.FMA(p, r, c[6])
	p = math.FMA(p, r, c[7])
	p = math.FMA(p, r, c[8])
	p = math.FMA(p, r, c[9])
	p = math.FMA(p, r, c[10])
	p = math.FMA(p, r, c[11])
	p = math.FMA(p, r, c[12])
	p = math.FMA(p, r, c[13])
	return p * math.Float64frombits((math.Float64bits(t)+1023)<<52)
}

// sum8 adds eight partial sums in the fixed tree every reduction here uses.
func sum8(s *[8]float64) float64 {
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}

// sumSquares is Σ x_i² in float64: lane l of eight partial sums adds
// i ≡ l (mod 8) in ascending i, the tail past the last multiple of 8 goes
// to lane 0, and sum8 adds the lanes.
func sumSquares(x []float32) float64 {
	if s, ok := sumSquaresVec(x); ok {
		return s
	}
	var s [8]float64
	n8 := len(x) &^ 7
	for i := 0; i < n8; i += 8 {
		xx := x[i : i+8 : i+8]
		for l, v := range xx {
			s[l] += float64(float64(v) * float64(v))
		}
	}
	for _, v := range x[n8:] {
		s[0] += float64(float64(v) * float64(v))
	}
	return sum8(&s)
}

// rmsNorm writes x / rms(x) * weight into out (out may alias x). The sum
// of squares is float64 (sumSquares).
func rmsNorm(out, x, weight []float32, eps float64) {
	scale := float32(1 / math.Sqrt(sumSquares(x)/float64(len(x))+eps))
	if scaleMulVec(out, x, scale, weight) {
		return
	}
	weight = weight[:len(x)]
	out = out[:len(x)]
	for i, v := range x {
		out[i] = float32(v*scale) * weight[i]
	}
}

// rmsNormBackward adds to dx the gradient of out = rmsNorm(x, weight) given
// dOut, in float64 per row: with s = 1/rms(x),
// dx_i = s·g_i·dy_i − s³/n · x_i · Σ_j g_j·dy_j·x_j. Both sums are taken
// like sumSquares.
func rmsNormBackward(dx, dOut, x, weight []float32, eps float64) {
	n := len(x)
	ss, dot, ok := normSumsVec(dOut, x, weight)
	if !ok {
		ss, dot = normSums(dOut, x, weight)
	}
	s := 1 / math.Sqrt(ss/float64(n)+eps)
	k := s * s * s * dot / float64(n)
	if normGradVec(dx, dOut, x, weight, s, k) {
		return
	}
	dOut, weight, dx = dOut[:n], weight[:n], dx[:n]
	for i, v := range x {
		dx[i] += float32(float64(s*float64(weight[i])*float64(dOut[i])) - float64(k*float64(v)))
	}
}

// normSums returns Σ x_i² and Σ g_i·dy_i·x_i in sumSquares' order.
func normSums(dOut, x, weight []float32) (float64, float64) {
	var s, d [8]float64
	n := len(x)
	dOut, weight = dOut[:n], weight[:n]
	add := func(l, i int) {
		v := float64(x[i])
		s[l] += float64(v * v)
		d[l] += float64(float64(float64(weight[i])*float64(dOut[i])) * v)
	}
	n8 := n &^ 7
	for i := 0; i < n8; i += 8 {
		for l := range 8 {
			add(l, i+l)
		}
	}
	for i := n8; i < n; i++ {
		add(0, i)
	}
	return sum8(&s), sum8(&d)
}

// silu is x·sigmoid(x), computed as x / (1 + e^−x) in float64.
func silu(x float32) float32 {
	return float32(float64(x) / (1 + exp64(-float64(x))))
}

// siluMul writes silu(g[j])·u[j] into h (h may alias g): SwiGLU's product.
func siluMul(h, g, u []float32) {
	if siluMulVec(h, g, u) {
		return
	}
	h, u = h[:len(g)], u[:len(g)]
	for j, gv := range g {
		h[j] = silu(gv) * u[j]
	}
}

// siluMulBackward takes dh, the gradient of h = silu(g)·u, in dg and
// replaces it with the gradient of g, writing u's into du.
func siluMulBackward(dg, du, g, u []float32) {
	if !siluMulBackwardVec(dg, du, g, u) {
		siluMulBackwardScalar(dg, du, g, u)
	}
}

func siluMulBackwardScalar(dg, du, g, u []float32) {
	n := len(dg)
	du, g, u = du[:n], g[:n], u[:n]
	for j, dh := range dg {
		gv, uv := g[j], u[j]
		e := exp64(-float64(gv))
		du[j] = float32(float64(dh) * float64(float32(float64(gv)/(1+e))))
		dg[j] = float32(float64(float64(dh)*float64(uv)) * siluGradExp(float64(gv), e))
	}
}

// siluGradExp is d silu(x)/dx = σ(x)·(1 + x·(1 − σ(x))) given e = e^−x.
func siluGradExp(x, e float64) float64 {
	s := 1 / (1 + e)
	return s * (1 + float64(x*(1-s)))
}

// softmax32 replaces the scores sc by their softmax: numerators
// exp32(s − max) and their float64 sum (expScores32), each numerator
// times the float32 reciprocal of the sum.
func softmax32(sc []float32) {
	normalise(sc, expScores32(nil, sc, 1, max32(sc)))
}

// max32 is the largest of s (−Inf for none), through the vector kernels
// where they run (max32Vec's NaN and ±0 differences from Go's max change
// nothing a softmax computes).
func max32(s []float32) float32 {
	if m, ok := max32Vec(s); ok {
		return m
	}
	m := float32(math.Inf(-1))
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

// normalise multiplies the softmax numerators sc by the float32
// reciprocal of sum, their float64 sum (with any numerator outside sc,
// GPT-OSS's sink, added last).
func normalise(sc []float32, sum float64) {
	inv := float32(1 / sum)
	if scaleVec(sc, inv) {
		return
	}
	for t := range sc {
		sc[t] *= inv
	}
}

// expScaled writes exp64(logits[i]·invT − mx) into dst: the weights of a
// tempered softmax over the vocabulary.
func expScaled(dst []float64, logits []float32, invT, mx float64) {
	if expScaledVec(dst, logits, invT, mx) {
		return
	}
	dst = dst[:len(logits)]
	for i, v := range logits {
		dst[i] = exp64(float64(float64(v)*invT) - mx)
	}
}

// expScaledSum is Σ exp64(logits[i]·invT − mx) in sumSquares' order
// (eight lane-strided partial sums, the tail in lane 0, added by sum8):
// a serial sum in ascending order would take longer than the
// exponentials' vector loop.
func expScaledSum(logits []float32, invT, mx float64) float64 {
	if s, ok := expScaledSumVec(logits, invT, mx); ok {
		return s
	}
	var s [8]float64
	n8 := len(logits) &^ 7
	for i := 0; i < n8; i += 8 {
		for l, v := range logits[i : i+8 : i+8] {
			s[l] += exp64(float64(float64(v)*invT) - mx)
		}
	}
	for _, v := range logits[n8:] {
		s[0] += exp64(float64(float64(v)*invT) - mx)
	}
	return sum8(&s)
}

// expScaledKeep writes exp64(logits[i]·invT − mx) into dst and returns
// their sum, with expScaledSum's bits (the same terms in the same order).
func expScaledKeep(dst []float64, logits []float32, invT, mx float64) float64 {
	if s, ok := expScaledKeepVec(dst, logits, invT, mx); ok {
		return s
	}
	expScaled(dst, logits, invT, mx)
	return sumLanes(dst)
}

// sumLanes is Σ x in sumSquares' order.
func sumLanes(x []float64) float64 {
	if s, ok := sumLanesVec(x); ok {
		return s
	}
	var s [8]float64
	n8 := len(x) &^ 7
	for i := 0; i < n8; i += 8 {
		for l, v := range x[i : i+8 : i+8] {
			s[l] += v
		}
	}
	for _, v := range x[n8:] {
		s[0] += v
	}
	return sum8(&s)
}

// scaleExps writes float32(e[i]·f) into row: the loss gradient of the
// logits from the kept exponentials (f = scale / Σ e).
func scaleExps(row []float32, e []float64, f float64) {
	if scaleExpsVec(row, e, f) {
		return
	}
	e = e[:len(row)]
	for i := range row {
		row[i] = float32(e[i] * f)
	}
}

// widenBF16 widens bfloat16 bits to float32 (exactly) into dst.
func widenBF16(dst []float32, h []uint16) {
	if widenBF16Vec(dst, h) {
		return
	}
	dst = dst[:len(h)]
	for j, v := range h {
		dst[j] = math.Float32frombits(uint32(v) << 16)
	}
}

// ropeRotate rotates pairs (a[i], b[i]) by the angles whose cosines and
// sines are cos[i], sin[i]; with inverse it rotates by the negated angles
// (the transpose, for the backward pass).
func ropeRotate(a, b, cos, sin []float32, inverse bool) {
	if !ropeRotateVec(a, b, cos, sin, inverse) {
		ropeRotateScalar(a, b, cos, sin, inverse)
	}
}

func ropeRotateScalar(a, b, cos, sin []float32, inverse bool) {
	n := len(a)
	b, cos, sin = b[:n], cos[:n], sin[:n]
	for i, x1 := range a {
		x2 := b[i]
		if inverse {
			a[i] = float32(x1*cos[i]) + float32(x2*sin[i])
			b[i] = float32(x2*cos[i]) - float32(x1*sin[i])
		} else {
			a[i] = float32(x1*cos[i]) - float32(x2*sin[i])
			b[i] = float32(x2*cos[i]) + float32(x1*sin[i])
		}
	}
}

// adamConsts are one optimizer step's per-element constants.
type adamConsts struct {
	coef, b1, b2, decay, stepSize, bc2, eps float64
}

// adamUpdate applies one AdamW step to w, m and v from grad, in float64
// per element.
func adamUpdate(w, m, v, grad []float32, a adamConsts) {
	if !adamUpdateVec(w, m, v, grad, a) {
		adamUpdateScalar(w, m, v, grad, a)
	}
}

func adamUpdateScalar(w, m, v, grad []float32, a adamConsts) {
	n := len(grad)
	w, m, v = w[:n], m[:n], v[:n]
	for i, g32 := range grad {
		g := float64(g32) * a.coef
		mi := float64(a.b1*float64(m[i])) + float64((1-a.b1)*g)
		vi := float64(a.b2*float64(v[i])) + float64(float64((1-a.b2)*g)*g)
		wi := float64(w[i]) * a.decay
		wi -= float64(a.stepSize*mi) / (math.Sqrt(vi)/a.bc2 + a.eps)
		w[i], m[i], v[i] = float32(wi), float32(mi), float32(vi)
	}
}
