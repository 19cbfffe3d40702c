package export

import "math"

// FP8 E4M3 ("e4m3fn", as DeepSeek V3 and Kimi K2 store their weights): a
// sign, four exponent bits with bias 7 and three mantissa bits; no
// infinities, S.1111.111 is NaN, the largest finite value is 448.
const fp8Max = 448

// fp8Values decodes every byte.
var fp8Values = fp8Table()

func fp8Table() (vals [256]float32) {
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
	return vals
}

// fp8Encode rounds v to the nearest E4M3 value (ties to the even code),
// saturating at ±448; NaN stays NaN. Normal values round float32's
// mantissa to three bits; below 2^-6 the step is 2^-9.
func fp8Encode(v float32) byte {
	if v != v {
		return 0x7f
	}
	bits := math.Float32bits(v)
	sign := byte(bits>>24) & 0x80
	bits &^= 1 << 31
	switch {
	case bits >= 0x43e00000: // 448
		return sign | 0x7e
	case bits < 0x3c800000: // 2^-6: subnormal, q/8 · 2^-6 (q = 8 is 2^-6)
		return sign | byte(math.RoundToEven(float64(math.Float32frombits(bits))*512))
	}
	bits += 0x7ffff + (bits>>20)&1
	code := (int(bits>>23)-127+7)<<3 | int(bits>>20)&7
	return sign | byte(min(code, 0x7e))
}
