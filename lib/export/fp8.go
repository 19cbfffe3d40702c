package export

import (
	"math"
	"sort"
)

// FP8 E4M3 ("e4m3fn", as DeepSeek V3 and Kimi K2 store their weights): a
// sign, four exponent bits with bias 7 and three mantissa bits; no
// infinities, S.1111.111 is NaN, the largest finite value is 448.
const fp8Max = 448

// fp8Values decodes every byte; fp8Positive is the finite non-negative
// values in code order (which is value order), for encoding.
var fp8Values, fp8Positive = fp8Tables()

func fp8Tables() (vals [256]float32, pos []float32) {
	for c := range 256 {
		e, m := (c>>3)&15, c&7
		var v float64
		switch {
		case e == 15 && m == 7:
			v = math.NaN()
		case e == 0:
			v = math.Ldexp(float64(m), -9) // subnormal: m/8 · 2^-6
		default:
			v = math.Ldexp(1+float64(m)/8, e-7)
		}
		if c&0x80 != 0 {
			v = -v
		}
		vals[c] = float32(v)
	}
	return vals, append([]float32(nil), vals[:0x7f]...)
}

// fp8Encode rounds v to the nearest E4M3 value (ties to the even code),
// saturating at ±448; NaN stays NaN.
func fp8Encode(v float32) byte {
	if v != v {
		return 0x7f
	}
	var sign byte
	if math.Signbit(float64(v)) {
		sign, v = 0x80, -v
	}
	if v >= fp8Max {
		return sign | 0x7e
	}
	i := sort.Search(len(fp8Positive), func(i int) bool { return fp8Positive[i] >= v })
	if i > 0 {
		lo, hi := v-fp8Positive[i-1], fp8Positive[i]-v
		if lo < hi || (lo == hi && (i-1)&1 == 0) {
			i--
		}
	}
	return sign | byte(i)
}
