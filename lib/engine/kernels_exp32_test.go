package engine

import (
	"math"
	"testing"
)

// ulp32 is how many float32 steps lie between a and b (both of one sign).
func ulp32(a, b float32) uint32 {
	x, y := math.Float32bits(a), math.Float32bits(b)
	return max(x, y) - min(x, y)
}

// TestExp32Accuracy: exp32 is within 2 float32 ulp of e^x rounded to
// float32, over softmax's arguments (every 4099th float32 in [−87, 0]) and
// the positive side up to 88, and keeps its clamps and NaN.
func TestExp32Accuracy(t *testing.T) {
	var worst uint32
	var at float32
	check := func(x float32) {
		if d := ulp32(exp32(x), float32(math.Exp(float64(x)))); d > worst {
			worst, at = d, x
		}
	}
	for b := uint32(0x80000000); b <= math.Float32bits(-87); b += 4099 {
		check(math.Float32frombits(b))
	}
	for b := uint32(0); b <= math.Float32bits(88); b += 4099 {
		check(math.Float32frombits(b))
	}
	for _, x := range []float32{0, 1, -1, math.Ln2 / 2, -math.Ln2 / 2, 88, -87, -86.99, 87.9} {
		check(x)
	}
	t.Logf("max error %d ulp (at x = %g)", worst, at)
	if worst > 2 {
		t.Fatalf("exp32(%g) is %d ulp from e^x, want <= 2", at, worst)
	}
	inf := float32(math.Inf(1))
	for x, want := range map[float32]float32{88.5: inf, inf: inf, -87.5: 0, -inf: 0} {
		if got := exp32(x); got != want {
			t.Errorf("exp32(%g) = %g, want %g", x, got, want)
		}
	}
	if nan := float32(math.NaN()); exp32(nan) == exp32(nan) {
		t.Error("exp32(NaN) is not NaN")
	}
}
