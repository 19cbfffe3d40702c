package quant

import (
	"math"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// MXFP4Values are the 16 E2M1 codes' values (OCP microscaling FP4).
var MXFP4Values = [16]float32{0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6}

// MXFP4Decode widens MXFP4 blocks (16 bytes, 32 values each, low nibble
// first) times their E8M0 scales into v. Every value times its power of
// two is exact in float32 (or overflows to the infinity, as the scale
// byte 255 does, float32(2^128)). Sixteen lanes at a time where there is
// a vector unit (mxfp4_simd.go), the same products.
func MXFP4Decode(blocks, scales []byte, v []float32) {
	MXFP4DecodeStrided(blocks, scales, 1, len(scales), v)
}

// MXFP4DecodeStrided is MXFP4Decode of n blocks taken stride blocks apart
// (block j is blocks[16·j·stride:] with scale scales[j·stride]: one
// column of a matrix's blocks) into v[32·j:].
func MXFP4DecodeStrided(blocks, scales []byte, stride, n int, v []float32) {
	if mxfp4DecodeVector(blocks, scales, stride, n, v) {
		return
	}
	for j := range n {
		i := j * stride
		s := math.Float32frombits(mxfp4ScaleBits(scales[i]))
		for k, b := range blocks[16*i : 16*i+16] {
			v[32*j+2*k], v[32*j+2*k+1] = MXFP4Values[b&15]*s, MXFP4Values[b>>4]*s
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

// MXFP4Encode encodes 32 values into a block of 16 bytes and returns its
// scale byte, as transformers' quantize_to_mxfp4 does (the values rounded
// to bfloat16, then triton_kernels' downcast_to_mxfp with its default
// rounding): the scale is the power of two at or above the largest
// magnitude / 6 (its float32 exponent rounded up), stored as that
// exponent's biased byte; each value times 1/scale becomes E2M1 by
// rounding its bits to one mantissa bit, ties away from zero, saturating
// at 6. Sixteen lanes at a time where there is a vector unit
// (mxfp4_simd.go), the same bits.
func MXFP4Encode(v []float32, out []byte) byte {
	var sc [1]byte
	MXFP4EncodeStrided(v, 1, out, sc[:], 1)
	return sc[0]
}

// MXFP4EncodeStrided is MXFP4Encode of the n blocks of 32 values in v
// into blocks stride apart (block j to out[16·j·stride:], its scale to
// scales[j·stride]): one column of a matrix's blocks.
func MXFP4EncodeStrided(v []float32, n int, out, scales []byte, stride int) {
	for j := 0; j < n; j++ {
		if j = mxfp4EncodeVector(v, n, out, scales, stride, j); j == n {
			return
		}
		i := j * stride // a block the vector body leaves to this one
		scales[i] = mxfp4EncodeScalar(v[32*j:32*j+32], out[16*i:16*i+16])
	}
}

func mxfp4EncodeScalar(v []float32, out []byte) byte {
	var x [32]float32
	var amax float32
	for i, f := range v[:32] {
		x[i] = safetensors.BF16ToFloat32(safetensors.Float32ToBF16(f))
		amax = max(amax, float32(math.Abs(float64(x[i]))))
	}
	exp := mxfp4Exp(math.Float32bits(amax / 6))
	var inv float32
	if exp != 0 {
		inv = 1 / math.Float32frombits(exp)
	}
	for k := range out[:16] {
		out[k] = e2m1(x[2*k]*inv) | e2m1(x[2*k+1]*inv)<<4
	}
	return byte(exp >> 23)
}

// mxfp4Exp is 2^ceil(log2 f) from f's bits: the exponent rounded up.
func mxfp4Exp(f uint32) uint32 { return (f + 0x7fffff) & 0x7f800000 }

// e2m1 is the 4-bit code of q: sign, then the magnitude's bits rounded to
// two exponent bits (bias 1) and one mantissa bit, ties away from zero,
// saturating at 6 (code 7); below 1 the subnormal 0.5 step.
func e2m1(q float32) byte {
	bits := math.Float32bits(q)
	exp, man := (bits>>23)&0xff, bits&0x7fffff
	if exp < 127 { // the implicit bit moves into the mantissa
		man = (0x400000 | man>>1) >> (126 - exp)
	}
	exp = max(exp, 126) - 126
	code := min(((exp<<2|man>>21)+1)>>1, 7)
	return byte(bits>>28)&8 | byte(code)
}
