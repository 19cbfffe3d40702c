package engine

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// fma32Exact is x·y + z computed exactly and rounded once to float32.
func fma32Exact(x, y, z float32) float32 {
	bf := func(v float32) *big.Float { return new(big.Float).SetPrec(400).SetFloat64(float64(v)) }
	s := bf(x)
	s.Mul(s, bf(y))
	s.Add(s, bf(z))
	r, _ := s.Float32()
	return r
}

// fma32HardCases have x·y just off a float32 halfway point of 1 + x·y
// once rounded to float64, where rounding twice gives the wrong bits.
var fma32HardCases = [][3]uint32{
	{0x3f8007f1, 0x337ff01f, 0x3f800000},
	{0x3f8007f2, 0x337ff01d, 0x3f800000},
	{0x3f8007f4, 0x337ff019, 0x3f800000},
}

func TestFMA32(t *testing.T) {
	check := func(x, y, z float32) {
		t.Helper()
		want := math.Float32bits(fma32Exact(x, y, z))
		if got := math.Float32bits(fma32(x, y, z)); got != want {
			t.Fatalf("fma32(%g, %g, %g) = %#x, want %#x", x, y, z, got, want)
		}
		if got := math.Float32bits(fma32Soft(x, y, z)); got != want {
			t.Fatalf("fma32Soft(%g, %g, %g) = %#x, want %#x", x, y, z, got, want)
		}
	}
	for _, c := range fma32HardCases {
		x, y, z := math.Float32frombits(c[0]), math.Float32frombits(c[1]), math.Float32frombits(c[2])
		if float32(math.FMA(float64(x), float64(y), float64(z))) == fma32Exact(x, y, z) {
			t.Fatalf("case %#x is not hard: rounding twice gets it right", c)
		}
		check(x, y, z)
		check(-x, y, -z)
	}
	r := rand.New(rand.NewPCG(1, 2))
	// Random bit patterns over every finite exponent (subnormals too), and
	// near-cancelling sums.
	finite := func() float32 {
		for {
			if v := math.Float32frombits(r.Uint32()); !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) {
				return v
			}
		}
	}
	for range 200000 {
		x, y := finite(), finite()
		check(x, y, finite())
		check(x, y, -float32(float64(x)*float64(y)))
		check(float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64()))
	}
	check(float32(math.Inf(1)), 1, 1)
	check(0, -1, 0)
	check(math.MaxFloat32, 2, -math.MaxFloat32)
}
