package quant

import "math"

// MXFP4Values are the 16 E2M1 codes' values (OCP microscaling FP4).
var MXFP4Values = [16]float32{0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6}

// MXFP4Decode widens MXFP4 blocks (16 bytes, 32 values each, low nibble
// first) times their E8M0 scales into v. Every value times its power of
// two is exact in float32 (or overflows to the infinity, as the scale
// byte 255 does, float32(2^128)). Sixteen lanes at a time where there is
// a vector unit (mxfp4_simd.go), the same products.
func MXFP4Decode(blocks, scales []byte, v []float32) {
	if mxfp4DecodeVector(blocks, scales, v) {
		return
	}
	for i, sc := range scales {
		s := math.Float32frombits(mxfp4ScaleBits(sc))
		for k, b := range blocks[16*i : 16*i+16] {
			v[32*i+2*k], v[32*i+2*k+1] = MXFP4Values[b&15]*s, MXFP4Values[b>>4]*s
		}
	}
}

// mxfp4ScaleBits is the float32 of an E8M0 scale byte, 2^(sc-127):
// subnormal for 0, the infinity for 255 (2^128 overflows float32).
func mxfp4ScaleBits(sc byte) uint32 {
	switch sc {
	case 0:
		return 1 << 22
	case 255:
		return 0x7f800000
	}
	return uint32(sc) << 23
}
