//go:build goexperiment.simd && amd64

package engine

import (
	"math"
	"slices"
	"testing"
)

// TestExp32VecMatchesScalar: expScores32's 16-lane and 8-lane bodies give
// exp32's bits for every row length up to 70 (whole passes, masked tails),
// across its range, its clamps and non-finite inputs, and write nothing
// past the row.
func TestExp32VecMatchesScalar(t *testing.T) {
	if !useSIMD || !expVec {
		t.Skip("no AVX2 with FMA on this CPU")
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	xs := []float32{0, -0.5, 1e-9, -1e-30, 3.7, -17.25, 88.7, 87.9, 89.6, -85.9, -86.5, -1e4, inf, -inf, nan, 2, -3, 40}
	r := newRNG(3)
	for len(xs) < 70 {
		xs = append(xs, r.uniform32()*60-30)
	}
	defer func(old bool) { avx512 = old }(avx512)
	for _, wide := range []bool{true, false} {
		if wide && !avx512 {
			continue
		}
		avx512 = wide
		for n := range len(xs) + 1 {
			g := append(slices.Clone(xs[:n]), 7)
			expScores32(nil, g[:n], 1, 1.5)
			for i, x := range xs[:n] {
				want := exp32(x - 1.5)
				if math.Float32bits(g[i]) != math.Float32bits(want) && !(g[i] != g[i] && want != want) {
					t.Fatalf("avx512=%v n=%d: exp32 lane (%g) = %g, scalar %g", wide, n, x, g[i], want)
				}
			}
			if g[n] != 7 {
				t.Fatalf("avx512=%v n=%d: wrote past the row", wide, n)
			}
		}
	}
}

// TestExpSumConstsFollowExp32: the literal holds exp32's constants and
// polynomial where attnExpSum16 reads them (internal/asmgen/attn/expsum.go).
func TestExpSumConstsFollowExp32(t *testing.T) {
	want := [18]float32{2: exp32Log2e, exp32Round, -exp32Ln2Hi, -exp32Ln2Lo, 15: exp32Hi, exp32Lo}
	copy(want[6:14], exp32Poly[:])
	if expSumConsts != want {
		t.Errorf("expSumConsts = %v, want %v", expSumConsts, want)
	}
}
