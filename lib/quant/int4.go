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

// Int4Row widens one packed row into dst, scaled by its group scales.
func Int4Row(packed, scales []byte, group int, dst []float32) {
	for j := range dst {
		word := binary.LittleEndian.Uint32(packed[4*(j/8):])
		q := int32(word>>(4*(j%8))) & 15
		if q >= 8 {
			q -= 16
		}
		s := safetensors.BF16ToFloat32(binary.LittleEndian.Uint16(scales[2*(j/group):]))
		dst[j] = float32(q) * s
	}
}

// Int4Quantize packs one row symmetrically: each group's scale is its
// largest magnitude over 7, rounded to bfloat16 before the values are
// divided by it, and each value rounds to the nearest integer in [-8, 7].
func Int4Quantize(src []float32, group int, packed, scales []byte) {
	clear(packed[:4*((len(src)+7)/8)])
	for g := 0; g < len(src); g += group {
		var amax float32
		for _, v := range src[g : g+group] {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		sb := safetensors.Float32ToBF16(amax / 7)
		binary.LittleEndian.PutUint16(scales[2*(g/group):], sb)
		s := safetensors.BF16ToFloat32(sb)
		for j := g; j < g+group; j++ {
			var q float64
			if s > 0 {
				q = min(7, max(-8, math.RoundToEven(float64(src[j]/s))))
			}
			w := binary.LittleEndian.Uint32(packed[4*(j/8):])
			w |= (uint32(int32(q)) & 15) << (4 * (j % 8))
			binary.LittleEndian.PutUint32(packed[4*(j/8):], w)
		}
	}
}

// Int4Rows dequantises rows [lo, lo+n) of a cols-wide INT4 matrix: packed
// holds those rows, scales the whole matrix's BF16 group scales.
func Int4Rows(packed, scales []byte, cols, group, lo, n int, dst []float32) {
	sr := 2 * cols / group
	for r := range n {
		Int4Row(packed[r*cols/2:], scales[(lo+r)*sr:], group, dst[r*cols:(r+1)*cols])
	}
}
