package export

import (
	"context"
	"io"
	"math"
	"os"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// MXFP4 requantisation, as transformers' quantize_to_mxfp4 does it (the
// weight rounded to bfloat16, then triton_kernels' downcast_to_mxfp with
// its default rounding): per block of 32 values, the scale is the power of
// two at or above largest magnitude / 6 (its float32 exponent rounded up),
// stored as that exponent's biased byte; each value times 1/scale becomes
// E2M1 by rounding its bits to one mantissa bit, ties away from zero,
// saturating at 6. A block the update leaves unchanged (every merged value
// equal to the base's) keeps its bytes: requantising can pick a smaller
// scale for the same values, and an unadapted expert must stay as released.

// requantMXFP4 writes one adapted blocks tensor: each expert dequantised,
// updated in float32, requantised, a strip of 32 inputs at a time on every
// core (mxfp4_strips.go) while the expert before is written; its new
// scales wait in m.mxFresh for the scales tensor, which sorts after it in
// the same shard.
func (m *merger) requantMXFP4(ctx context.Context, f *os.File, s source, w io.Writer) error {
	j := s.mx
	x, err := newMXExperts(m.base.Dir, f, s)
	if err != nil {
		return err
	}
	defer x.close()
	per := j.rows * j.cols
	fresh := make([]byte, j.experts*per/32)
	make1 := func(e int, dst []byte) ([]byte, error) {
		if err := x.load(e); err != nil {
			return nil, err
		}
		sc := fresh[e*per/32 : (e+1)*per/32]
		x.run(j.cols/32, func(c int, v, d []float32) { x.requantStrip(c, v, d, dst, sc) })
		return dst[:per/2], nil
	}
	if err := m.pipeline(ctx, j.experts, 1, per/2, make1, w); err != nil {
		return err
	}
	m.mxFresh[j.scales.Name] = fresh
	return nil
}

// mxBlock encodes 32 values into 16 bytes and returns the scale byte.
func mxBlock(v []float32, out []byte) byte {
	var x [32]float32
	var amax float32
	for i, f := range v {
		x[i] = safetensors.BF16ToFloat32(safetensors.Float32ToBF16(f))
		amax = max(amax, float32(math.Abs(float64(x[i]))))
	}
	exp := (math.Float32bits(amax/6) + 0x7fffff) & 0x7f800000 // 2^ceil(log2(amax/6))
	var inv float32
	if exp != 0 {
		inv = 1 / math.Float32frombits(exp)
	}
	for k := range out {
		out[k] = e2m1(x[2*k]*inv) | e2m1(x[2*k+1]*inv)<<4
	}
	return byte(exp >> 23)
}

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
