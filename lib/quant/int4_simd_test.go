//go:build goexperiment.simd && amd64

package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The scale made in vector registers is int4Scale's for every largest
// magnitude: zero, subnormals, rounding ties, the largest finite, the
// infinity, NaNs quiet and signalling, and random bits.
func TestInt4ScaleVectorMatchesScalar(t *testing.T) {
	if !fp8Lanes() {
		t.Skip("no AVX-512 here")
	}
	bits := []uint32{0, 1, 0x7fffff, 0x800000, math.Float32bits(7), math.Float32bits(7 * 1.00390625), 0x7f7fffff, 0x7f800000, 0x7f800001, 0x7fc00000, 0x7fffffff}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		bits = append(bits, r.Uint32()&^(1<<31))
	}
	for _, b := range bits {
		if got, want := int4ScaleVector(b), int4Scale(b); got != want {
			t.Fatalf("largest magnitude %#x: scale %#04x, want %#04x", b, got, want)
		}
	}
}
