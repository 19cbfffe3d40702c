package engine

import "math"

// exp32 is attention's exponential: the softmax numerators are float32, so a
// float32 exponential within ~1 ulp (as PyTorch's vectorised expf) is
// enough, and sixteen lanes of it with a degree-7 polynomial cost about a
// quarter of exp64's eight lanes of degree 13
// (docs/engine-attention.md, "Softmax in float32 (softexp)"). Same scheme as
// exp64: x = k·ln2 + r, |r| ≤ ln2/2, e^r by Horner's rule on the Taylor
// polynomial (truncation below 1e-8 relative), 2^k built in the exponent
// bits; every step one IEEE float32 operation, a fused multiply-add (fma32)
// wherever a product meets a sum, so the vector twins compute the same bits.
const (
	exp32Log2e = 1.44269504
	// ln2 = exp32Ln2Hi + exp32Ln2Lo; Hi has 9 significant bits, so k·Hi
	// is exact for |k| < 2^15 and x − k·Hi loses nothing.
	exp32Ln2Hi = 0.693359375
	exp32Ln2Lo = -2.12194440e-4
	// exp32Round rounds a float32 of magnitude < 2^22 to an integer when
	// added and subtracted; the integer sits in the sum's low bits.
	exp32Round = 0x1.8p23
	// exp32 returns +Inf above exp32Hi and 0 below exp32Lo, where 2^k
	// would leave float32's normal range.
	exp32Hi = 88.0
	exp32Lo = -87.0
)

// exp32Poly holds float32(1/n!) for n = 7 down to 0, Horner's order.
var exp32Poly = [8]float32{1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 1.0 / 2, 1, 1}

// exp32 is e^x within 2 ulp (TestExp32Accuracy), +Inf above 88, 0 below
// −87, NaN for NaN.
func exp32(x float32) float32 {
	switch {
	case x > exp32Hi:
		return float32(math.Inf(1))
	case x < exp32Lo:
		return 0
	}
	t := fma32(x, exp32Log2e, exp32Round)
	k := t - exp32Round
	r := fma32(k, -exp32Ln2Hi, x)
	r = fma32(k, -exp32Ln2Lo, r)
	c := &exp32Poly
	p := fma32(c[0], r, c[1])
	p = fma32(p, r, c[2])
	p = fma32(p, r, c[3])
	p = fma32(p, r, c[4])
	p = fma32(p, r, c[5])
	p = fma32(p, r, c[6])
	p = fma32(p, r, c[7])
	return p * math.Float32frombits((math.Float32bits(t)+127)<<23)
}

// expScores32 is the softmax numerators of forward and backward alike:
// sc[t] becomes e_t = exp32(float32(sc[t]·scale) − mx), the product and
// the difference rounded to float32 as softmaxRows does, and, unless p is
// nil (the forward), p[t] = float64(e_t). It returns Σ e_t in float64 in
// eight lanes (lane t mod 8, t ascending) added in sum8's tree: the
// backward's Σ is then the forward's, and the forward takes its sum in the
// exponentials' pass (a serial ascending chain had been a separate pass).
func expScores32(p []float64, sc []float32, scale, mx float32) float64 {
	if p != nil {
		p = p[:len(sc)]
	}
	if s, ok := expScores32Vec(p, sc, scale, mx); ok {
		return s
	}
	var s [8]float64
	for t, v := range sc {
		e := exp32(float32(v*scale) - mx)
		sc[t] = e
		s[t%8] += float64(e)
		if p != nil {
			p[t] = float64(e)
		}
	}
	return sum8(&s)
}
