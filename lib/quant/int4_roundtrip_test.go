package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// Int4Quantize then Int4Rows gives each value within half its group's
// step, the step being the group's largest magnitude over 7 in bfloat16,
// and the codes sit eight a word, the first in the lowest bits.
func TestInt4RoundTrip(t *testing.T) {
	const rows, cols, group = 3, 64, 16
	r := rand.New(rand.NewPCG(5, 6))
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(8)-4)))
	}
	packed, scales := make([]byte, rows*cols/2), make([]byte, 2*rows*cols/group)
	for row := range rows {
		Int4Quantize(v[row*cols:(row+1)*cols], group, packed[row*cols/2:], scales[2*row*cols/group:])
	}
	got := make([]float32, rows*cols)
	Int4Rows(packed, scales, cols, group, 0, rows, got)
	for i, x := range v {
		s := safetensors.BF16ToFloat32(binary.LittleEndian.Uint16(scales[2*(i/group):]))
		q := int(binary.LittleEndian.Uint32(packed[4*(i/8):])>>(4*(i%8))) & 15
		if q >= 8 {
			q -= 16
		}
		if got[i] != float32(q)*s || math.Abs(float64(x-got[i])) > 0.5*float64(s)*(1+1e-6) {
			t.Fatalf("value %d: %g decoded %g (code %d, scale %g)", i, x, got[i], q, s)
		}
	}
}
