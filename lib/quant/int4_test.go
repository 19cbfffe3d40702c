package quant

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// The word-at-a-time INT4 loops against the element-at-a-time ones they
// replaced (kept here as the reference): the same codes, scales and
// values, bit for bit.
func TestINT4MatchesElementwise(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, group := range []int{8, 16, 32, 64, 128} { // 8: scalar; 16: vector packing; 32 on: both vector
		for n := range 50 {
			src := make([]float32, 4*group)
			for i := range src {
				src[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(30)-15)))
			}
			if n == 0 {
				clear(src[:group]) // an all-zero group
			}
			if n == 1 { // halves: every value a tie (the scale is 1)
				for i := range src {
					src[i] = float32(i%30-15) * 0.5
				}
				for g := 0; g < len(src); g += group {
					src[g] = 7
				}
			}
			packed, scales := make([]byte, len(src)/2), make([]byte, 2*len(src)/group)
			wantP, wantS := make([]byte, len(src)/2), make([]byte, 2*len(src)/group)
			Int4Quantize(src, group, packed, scales)
			int4QuantizeRef(src, group, wantP, wantS)
			if !bytes.Equal(packed, wantP) || !bytes.Equal(scales, wantS) {
				t.Fatalf("group %d row %d: packed or scales differ", group, n)
			}
			got, want := make([]float32, len(src)), make([]float32, len(src))
			Int4Row(packed, scales, group, got)
			int4RowRef(packed, scales, group, want)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("group %d row %d value %d: %g, want %g", group, n, i, got[i], want[i])
				}
			}
		}
	}
}

func int4RowRef(packed, scales []byte, group int, dst []float32) {
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

func int4QuantizeRef(src []float32, group int, packed, scales []byte) {
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
