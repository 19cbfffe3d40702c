package engine

import (
	"math"
	"testing"
)

// ulpDiff is the distance between two finite float64s of the same sign in
// units in the last place.
func ulpDiff(a, b float64) uint64 {
	x, y := math.Float64bits(a), math.Float64bits(b)
	if x > y {
		return x - y
	}
	return y - x
}

// TestExp64Accuracy compares exp64 with math.Exp over the range the engine
// uses (softmax and SiLU arguments: [−708, 709], densest near 0) and at its
// edges: at most 2 ulp apart (1 ulp in practice), and the documented values
// outside the range.
func TestExp64Accuracy(t *testing.T) {
	r := newRNG(7)
	var worst uint64
	var at float64
	check := func(x float64) {
		if d := ulpDiff(exp64(x), math.Exp(x)); d > worst {
			worst, at = d, x
		}
	}
	for range 200000 {
		u := r.float64()
		check(1417*u - 708)           // whole range
		check(40*u - 20)              // activations and scores
		check(math.Ldexp(u-0.5, -20)) // near 0
	}
	for _, x := range []float64{0, -0.0, 1, -1, math.Ln2 / 2, -math.Ln2 / 2, 708.9, -707.9, 88.7, -103.9} {
		check(x)
	}
	t.Logf("max error %d ulp (at x = %g)", worst, at)
	if worst > 2 {
		t.Fatalf("exp64(%g) is %d ulp from math.Exp, want <= 2", at, worst)
	}
	for x, want := range map[float64]float64{709.5: math.Inf(1), math.Inf(1): math.Inf(1), -708.5: 0, math.Inf(-1): 0} {
		if got := exp64(x); got != want {
			t.Errorf("exp64(%g) = %g, want %g", x, got, want)
		}
	}
	if !math.IsNaN(exp64(math.NaN())) {
		t.Error("exp64(NaN) is not NaN")
	}
}

// TestLogSumExpKeepMatches requires the backward pass's log-sum-exp, which
// keeps its exponentials, to give the bits of the forward pass's, and the
// gradient from the kept exponentials to be the softmax times the scale.
func TestLogSumExpKeepMatches(t *testing.T) {
	for _, n := range []int{1, 7, 8, 15, 16, 17, 100, 1000, 151936} {
		logits := make([]float32, n)
		r := newRNG(uint64(n))
		for i := range logits {
			logits[i] = (2*r.uniform32() - 1) * 20
		}
		e := make([]float64, n)
		lse, sum := logSumExpKeep(e, logits)
		if want := logSumExp(logits, 1); math.Float64bits(lse) != math.Float64bits(want) {
			t.Fatalf("n=%d: logSumExpKeep %v, logSumExp %v", n, lse, want)
		}
		row := make([]float32, n)
		scaleExps(row, e, -0.5/sum)
		for i, z := range logits {
			want := -0.5 * math.Exp(float64(z)-lse)
			if d := math.Abs(float64(row[i]) - want); d > 1e-6*math.Abs(want) {
				t.Fatalf("n=%d: gradient %d is %v, want %v", n, i, row[i], want)
			}
		}
	}
}
