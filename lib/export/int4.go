package export

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

// int4Row widens one packed row into dst, scaled by its group scales:
// a word (eight values) at a time, each nibble sign-extended by shifting
// it to the top and back. Groups are whole words (their size is a
// multiple of 8, which latent_base.go checks).
func int4Row(packed, scales []byte, group int, dst []float32) {
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

// int4Quantize packs one row symmetrically: each group's scale is its
// largest magnitude over 7, rounded to bfloat16 before the values are
// divided by it, and each value rounds to the nearest integer in [-8, 7]
// (ties to even); a word is assembled then stored.
func int4Quantize(src []float32, group int, packed, scales []byte) {
	for g := 0; g < len(src); g += group {
		var amax float32
		for _, v := range src[g : g+group] {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		sb := safetensors.Float32ToBF16(amax / 7)
		binary.LittleEndian.PutUint16(scales[2*(g/group):], sb)
		s := safetensors.BF16ToFloat32(sb)
		for j := g; j < g+group; j += 8 {
			var w uint32
			for k, v := range src[j:min(len(src), j+8)] {
				var q float64
				if s > 0 {
					q = min(7, max(-8, math.RoundToEven(float64(v/s))))
				}
				w |= (uint32(int32(q)) & 15) << (4 * k)
			}
			binary.LittleEndian.PutUint32(packed[j/2:], w)
		}
	}
}
