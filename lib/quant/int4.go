package quant

import (
	"encoding/binary"
	"math"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// INT4 pack-quantized weights (compressed-tensors, as Kimi K2.6 stores its
// routed experts): X.weight_packed I32 [out, in/8] holds eight signed
// 4-bit values per int32, the first in the lowest bits; X.weight_scale
// BF16 [out, in/group] one scale per group of consecutive columns;
// X.weight_shape I32 [2] the matrix's [out, in]. value = int4 · scale.
//
// Where there is a vector unit (int4_simd.go) a row is widened and packed
// sixteen values at a time, each lane doing the scalar loops' operations,
// so the bits are the same (TestINT4MatchesElementwise, TestInt4Vector*).

// Int4Row widens one packed row into dst, scaled by its group scales:
// a word (eight values) at a time, each nibble sign-extended by shifting
// it to the top and back. Groups are whole words (their size is a
// multiple of 8, which Parse and Int4Shapes check).
func Int4Row(packed, scales []byte, group int, dst []float32) {
	if int4RowVector(packed, scales, group, dst) {
		return
	}
	for g := 0; g < len(dst); g += group {
		s := safetensors.BF16ToFloat32(binary.LittleEndian.Uint16(scales[2*(g/group):]))
		for j := g; j < min(len(dst), g+group); j += 8 {
			word := binary.LittleEndian.Uint32(packed[j/2:])
			out := dst[j:min(len(dst), j+8)]
			for k := range out {
				out[k] = float32(int32(word<<(28-4*k))>>28) * s
			}
		}
	}
}

// Int4Quantize packs one row symmetrically: each group's scale is its
// largest magnitude over 7, rounded to bfloat16 before the values are
// divided by it, and each value rounds to the nearest integer in [-8, 7]
// (ties to even), packed a word at a time.
func Int4Quantize(src []float32, group int, packed, scales []byte) {
	if int4QuantizeVector(src, group, packed, scales) {
		return
	}
	var amax [1]uint32
	var q [8]int32
	for g := 0; g < len(src); g += group {
		amax[0] = 0
		absMaxRow(src[g:g+group], group, amax[:])
		sb := int4Scale(amax[0])
		binary.LittleEndian.PutUint16(scales[2*(g/group):], sb)
		s := safetensors.BF16ToFloat32(sb)
		for j := 0; j < group; j += 8 {
			int4Round(q[:], src[g+j:g+j+8], s)
			var w uint32
			for k, x := range q {
				w |= (uint32(x) & 15) << (4 * k)
			}
			binary.LittleEndian.PutUint32(packed[(g+j)/2:], w)
		}
	}
}

// int4Scale is a group's bfloat16 scale from its largest magnitude's bits.
func int4Scale(amax uint32) uint16 {
	return safetensors.Float32ToBF16(math.Float32frombits(amax) / 7)
}

// int4Round sets q[j] to src[j]/s rounded to the nearest integer (ties to
// even) and clamped to [-8, 7]; all zero when s is not positive.
func int4Round(q []int32, src []float32, s float32) {
	if !(s > 0) {
		clear(q)
		return
	}
	for j, v := range src {
		q[j] = int32(min(7, max(-8, math.RoundToEven(float64(v/s)))))
	}
}
