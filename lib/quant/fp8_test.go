package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// FP8Encode is exact on every E4M3 value and otherwise the nearest value
// by brute force (ties to the even code), saturating beyond 448.
func TestFP8Encode(t *testing.T) {
	for c := range 256 {
		if c&0x7f == 0x7f {
			continue
		}
		if got := FP8Encode(float32(testFP8(byte(c)))); got != byte(c) && !(c == 0x80 && got == 0) {
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
		if math.Abs(float64(v)) >= FP8Max {
			best = int(FP8Encode(float32(math.Copysign(FP8Max, float64(v)))))
		}
		if got := FP8Encode(v); testFP8(got) != testFP8(byte(best)) {
			t.Fatalf("%g: encoded %g, nearest %g", v, testFP8(got), testFP8(byte(best)))
		}
	}
}

// testFP8 decodes E4M3 from its definition (NaN codes excluded).
func testFP8(c byte) float64 {
	e, m := int(c>>3)&15, float64(c&7)
	v := math.Ldexp(1+m/8, e-7)
	if e == 0 {
		v = math.Ldexp(m/8, -6)
	}
	if c&0x80 != 0 {
		return -v
	}
	return v
}

// FP8Values agrees with the definition on every non-NaN code.
func TestFP8Values(t *testing.T) {
	for c := range 256 {
		if c&0x7f != 0x7f && float64(FP8Values[c]) != testFP8(byte(c)) {
			t.Fatalf("code %#x: %g, want %g", c, FP8Values[c], testFP8(byte(c)))
		}
	}
}
