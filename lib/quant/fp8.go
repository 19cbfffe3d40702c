// Package quant decodes and encodes the block-quantised weight formats of
// released checkpoints (DeepSeek's FP8 blocks, compressed-tensors' packed
// INT4): the engine dequantises them on load, lib/export on merge.
package quant

import "math"

// FP8 E4M3 ("e4m3fn", as DeepSeek V3 and Kimi K2 store their weights): a
// sign, four exponent bits with bias 7 and three mantissa bits; no
// infinities, S.1111.111 is NaN, the largest finite value is 448.
const FP8Max = 448

// FP8Value decodes one code.
func FP8Value(c byte) float32 { return math.Float32frombits(fp8Bits[c]) }

// fp8Bits holds every code's value as float32 bits (NaN, which a constant
// cannot be, is 0x7fc00000 and its negative): a literal, laid out as data,
// where a table built by a function would be built at every start of
// tinker (cmd/tinker/app's TestOwnInitCodeStaysSmall). TestFP8Values
// checks it against the format's definition.
var fp8Bits = [256]uint32{
	0x00000000, 0x3b000000, 0x3b800000, 0x3bc00000, 0x3c000000, 0x3c200000, 0x3c400000, 0x3c600000,
	0x3c800000, 0x3c900000, 0x3ca00000, 0x3cb00000, 0x3cc00000, 0x3cd00000, 0x3ce00000, 0x3cf00000,
	0x3d000000, 0x3d100000, 0x3d200000, 0x3d300000, 0x3d400000, 0x3d500000, 0x3d600000, 0x3d700000,
	0x3d800000, 0x3d900000, 0x3da00000, 0x3db00000, 0x3dc00000, 0x3dd00000, 0x3de00000, 0x3df00000,
	0x3e000000, 0x3e100000, 0x3e200000, 0x3e300000, 0x3e400000, 0x3e500000, 0x3e600000, 0x3e700000,
	0x3e800000, 0x3e900000, 0x3ea00000, 0x3eb00000, 0x3ec00000, 0x3ed00000, 0x3ee00000, 0x3ef00000,
	0x3f000000, 0x3f100000, 0x3f200000, 0x3f300000, 0x3f400000, 0x3f500000, 0x3f600000, 0x3f700000,
	0x3f800000, 0x3f900000, 0x3fa00000, 0x3fb00000, 0x3fc00000, 0x3fd00000, 0x3fe00000, 0x3ff00000,
	0x40000000, 0x40100000, 0x40200000, 0x40300000, 0x40400000, 0x40500000, 0x40600000, 0x40700000,
	0x40800000, 0x40900000, 0x40a00000, 0x40b00000, 0x40c00000, 0x40d00000, 0x40e00000, 0x40f00000,
	0x41000000, 0x41100000, 0x41200000, 0x41300000, 0x41400000, 0x41500000, 0x41600000, 0x41700000,
	0x41800000, 0x41900000, 0x41a00000, 0x41b00000, 0x41c00000, 0x41d00000, 0x41e00000, 0x41f00000,
	0x42000000, 0x42100000, 0x42200000, 0x42300000, 0x42400000, 0x42500000, 0x42600000, 0x42700000,
	0x42800000, 0x42900000, 0x42a00000, 0x42b00000, 0x42c00000, 0x42d00000, 0x42e00000, 0x42f00000,
	0x43000000, 0x43100000, 0x43200000, 0x43300000, 0x43400000, 0x43500000, 0x43600000, 0x43700000,
	0x43800000, 0x43900000, 0x43a00000, 0x43b00000, 0x43c00000, 0x43d00000, 0x43e00000, 0x7fc00000,
	0x80000000, 0xbb000000, 0xbb800000, 0xbbc00000, 0xbc000000, 0xbc200000, 0xbc400000, 0xbc600000,
	0xbc800000, 0xbc900000, 0xbca00000, 0xbcb00000, 0xbcc00000, 0xbcd00000, 0xbce00000, 0xbcf00000,
	0xbd000000, 0xbd100000, 0xbd200000, 0xbd300000, 0xbd400000, 0xbd500000, 0xbd600000, 0xbd700000,
	0xbd800000, 0xbd900000, 0xbda00000, 0xbdb00000, 0xbdc00000, 0xbdd00000, 0xbde00000, 0xbdf00000,
	0xbe000000, 0xbe100000, 0xbe200000, 0xbe300000, 0xbe400000, 0xbe500000, 0xbe600000, 0xbe700000,
	0xbe800000, 0xbe900000, 0xbea00000, 0xbeb00000, 0xbec00000, 0xbed00000, 0xbee00000, 0xbef00000,
	0xbf000000, 0xbf100000, 0xbf200000, 0xbf300000, 0xbf400000, 0xbf500000, 0xbf600000, 0xbf700000,
	0xbf800000, 0xbf900000, 0xbfa00000, 0xbfb00000, 0xbfc00000, 0xbfd00000, 0xbfe00000, 0xbff00000,
	0xc0000000, 0xc0100000, 0xc0200000, 0xc0300000, 0xc0400000, 0xc0500000, 0xc0600000, 0xc0700000,
	0xc0800000, 0xc0900000, 0xc0a00000, 0xc0b00000, 0xc0c00000, 0xc0d00000, 0xc0e00000, 0xc0f00000,
	0xc1000000, 0xc1100000, 0xc1200000, 0xc1300000, 0xc1400000, 0xc1500000, 0xc1600000, 0xc1700000,
	0xc1800000, 0xc1900000, 0xc1a00000, 0xc1b00000, 0xc1c00000, 0xc1d00000, 0xc1e00000, 0xc1f00000,
	0xc2000000, 0xc2100000, 0xc2200000, 0xc2300000, 0xc2400000, 0xc2500000, 0xc2600000, 0xc2700000,
	0xc2800000, 0xc2900000, 0xc2a00000, 0xc2b00000, 0xc2c00000, 0xc2d00000, 0xc2e00000, 0xc2f00000,
	0xc3000000, 0xc3100000, 0xc3200000, 0xc3300000, 0xc3400000, 0xc3500000, 0xc3600000, 0xc3700000,
	0xc3800000, 0xc3900000, 0xc3a00000, 0xc3b00000, 0xc3c00000, 0xc3d00000, 0xc3e00000, 0xffc00000,
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
			dst[j] = FP8Value(src[j]) * s[c0/b]
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
