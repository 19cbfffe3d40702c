package export

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tinkershell/tinker/lib/quant"
)

// fp8Encode is exact on every E4M3 value and otherwise the nearest value
// by brute force (ties to the even code), saturating beyond 448.
func TestFP8Encode(t *testing.T) {
	for c := range 256 {
		if c&0x7f == 0x7f {
			continue
		}
		if got := quant.FP8Encode(float32(testFP8(byte(c)))); got != byte(c) && !(c == 0x80 && got == 0) {
			t.Fatalf("code %#x: encodes back to %#x", c, got)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		v := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(24)-14)))
		best := -1
		for c := range 256 {
			if c&0x7f == 0x7f {
				continue
			}
			d, bd := math.Abs(testFP8(byte(c))-float64(v)), 0.0
			if best >= 0 {
				bd = math.Abs(testFP8(byte(best)) - float64(v))
			}
			if best < 0 || d < bd || (d == bd && c&1 == 0 && math.Signbit(testFP8(byte(c))) == math.Signbit(float64(v))) {
				best = c
			}
		}
		if math.Abs(float64(v)) >= quant.FP8Max {
			best = int(quant.FP8Encode(float32(math.Copysign(quant.FP8Max, float64(v)))))
		}
		if got := quant.FP8Encode(v); testFP8(got) != testFP8(byte(best)) {
			t.Fatalf("%g: encoded %g, nearest %g", v, testFP8(got), testFP8(byte(best)))
		}
	}
}
