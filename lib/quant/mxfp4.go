package quant

import "math"

// MXFP4Values are the 16 E2M1 codes' values (OCP microscaling FP4).
var MXFP4Values = [16]float32{0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6}

// MXFP4Decode widens MXFP4 blocks (16 bytes, 32 values each, low nibble
// first) times their E8M0 scales into v. Every value times its power of
// two is exact in float32.
func MXFP4Decode(blocks, scales []byte, v []float32) {
	for i, sc := range scales {
		s := float32(math.Ldexp(1, int(sc)-127))
		for k, b := range blocks[16*i : 16*i+16] {
			v[32*i+2*k], v[32*i+2*k+1] = MXFP4Values[b&15]*s, MXFP4Values[b>>4]*s
		}
	}
}
