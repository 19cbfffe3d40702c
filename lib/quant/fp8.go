// Package quant decodes and encodes the block-quantised weight formats of
// released checkpoints (DeepSeek's FP8 blocks, compressed-tensors' packed
// INT4): the engine dequantises them on load, lib/export on merge.
package quant

import "math"

// FP8 E4M3 ("e4m3fn", as DeepSeek V3 and Kimi K2 store their weights): a
// sign, four exponent bits with bias 7 and three mantissa bits; no
// infinities, S.1111.111 is NaN, the largest finite value is 448.
const FP8Max = 448

// FP8Values decodes every byte.
var FP8Values = fp8Table()

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

// Bit patterns FP8Encode works with (float32 magnitudes).
const (
	fp8SatBits = 0x43e00000 // 448: at or above, saturate (infinity too)
	fp8SubBits = 0x3c800000 // 2^-6: below, E4M3's subnormal range
	fp8SubBias = 0x46800000 // 2^14, whose float32 step is E4M3's 2^-9
	fp8Rebias  = (127 - 7) << 3
)

// FP8Encode rounds v to the nearest E4M3 value (ties to the even code),
// saturating at ±448; NaN is 0x7f whatever its sign. All in integer
// arithmetic on the bits except the subnormal range, where adding 2^14
// makes float32's own round-to-nearest-even round to a multiple of 2^-9
// whose count sits in the low mantissa bits. fp8_simd.go does the same
// per lane.
func FP8Encode(v float32) byte {
	bits := math.Float32bits(v)
	sign := byte(bits>>24) & 0x80
	a := bits &^ (1 << 31)
	switch {
	case a > 0x7f800000:
		return 0x7f
	case a >= fp8SatBits:
		return sign | 0x7e
	case a < fp8SubBits:
		return sign | byte(math.Float32bits(math.Float32frombits(a)+(1<<14))-fp8SubBias)
	}
	// Round the mantissa to three bits (ties to even), carrying into the
	// exponent; exponent and mantissa then sit together above bit 20.
	a += 0x7ffff + (a>>20)&1
	return sign | byte(a>>20-fp8Rebias)
}

// The row loops below take a row in chunks of b values (a scale block's
// width), each chunk with its own factor: the vector loop (fp8_simd.go)
// does each chunk's multiple of 16 in one call for the whole row, the
// scalar body the rest, or everything where there is no vector unit.

// vecEnd is where the scalar body starts in chunk [c0, c1).
func vecEnd(c0, c1 int, vector bool) int {
	if vector {
		return c0 + (c1-c0)&^15
	}
	return c0
}

// fp8EncodeRow sets dst[j] to the E4M3 code of src[j]·inv[j/b].
func fp8EncodeRow(dst []byte, src []float32, b int, inv []float32) {
	dst = dst[:len(src)]
	vector := fp8EncodeVector(dst, src, b, inv)
	for c0 := 0; c0 < len(src); c0 += b {
		c1 := min(len(src), c0+b)
		for j := vecEnd(c0, c1, vector); j < c1; j++ {
			dst[j] = FP8Encode(src[j] * inv[c0/b])
		}
	}
}

// fp8DecodeRow sets dst[j] to the value of code src[j] times s[j/b].
func fp8DecodeRow(dst []float32, src []byte, b int, s []float32) {
	dst = dst[:len(src)]
	vector := fp8DecodeVector(dst, src, b, s)
	for c0 := 0; c0 < len(src); c0 += b {
		c1 := min(len(src), c0+b)
		for j := vecEnd(c0, c1, vector); j < c1; j++ {
			dst[j] = FP8Values[src[j]] * s[c0/b]
		}
	}
}

// absMaxRow raises m[c] to the largest magnitude of src's chunk c, as
// float32 bits: bits compare as the magnitudes do, and a NaN compares
// above them all.
func absMaxRow(src []float32, b int, m []uint32) {
	vector := absMaxVector(src, b, m)
	for c0 := 0; c0 < len(src); c0 += b {
		c1 := min(len(src), c0+b)
		for _, x := range src[vecEnd(c0, c1, vector):c1] {
			m[c0/b] = max(m[c0/b], math.Float32bits(x)&^(1<<31))
		}
	}
}
