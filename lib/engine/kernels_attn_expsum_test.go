//go:build goexperiment.simd && amd64

package engine

import (
	"math"
	"slices"
	"testing"
)

// TestExpSumKernelMatchesScalar: the generated attnExpSum16 (expScores32's
// AVX-512 path) gives the scalar body's numerators, widened copies and
// lane sums bit for bit, for every length 0..70 (whole 32-score passes
// and both masked tails), with p and without, on scores that reach
// exp32's limits (above 88 and below −87 after scaling), ±Inf and NaN,
// and writes nothing past the row in sc or p.
func TestExpSumKernelMatchesScalar(t *testing.T) {
	if !avx512 || !expVec {
		t.Skip("no AVX-512 on this CPU")
	}
	checkExpSumKernel(t, expScores16)
}

// checkExpSumKernel compares a generated numerators-and-sum pass
// (expScores16, expScores8) with expScores32's scalar body, as
// TestExpSumKernelMatchesScalar says.
func checkExpSumKernel(t *testing.T, kernel func(p []float64, sc []float32, scale, mx float32, s *[8]float64)) {
	t.Helper()
	special := []float32{90, 88, 87.9, -87, -90, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0, -1e-3}
	for n := 0; n < 71; n++ {
		row := randRows(1, n+16, uint64(n+3))[0]
		for i := range row[:n] {
			row[i] *= 40
			if i%5 == 2 {
				row[i] = special[(i+n)%len(special)] * 2 // scale 0.5 below
			}
		}
		mx := float32(1.5)
		want, wp := slices.Clone(row), make([]float64, n+8)
		var ws float64
		withSIMD(false, func() { ws = expScores32(wp[:n], want[:n], 0.5, mx) })
		for _, withP := range []bool{false, true} {
			got, gp := slices.Clone(row), make([]float64, n+8)
			var p []float64
			if withP {
				p = gp[:n]
			}
			var s [8]float64
			kernel(p, got[:n], 0.5, mx, &s)
			if gs := sum8(&s); math.Float64bits(gs) != math.Float64bits(ws) {
				t.Fatalf("n=%d p=%v: Σ %v, scalar %v", n, withP, gs, ws)
			}
			if !bitsEqual(got, want) {
				t.Fatalf("n=%d p=%v: numerators differ at %s (elements past n must stay)", n, withP, firstDiff(got, want))
			}
			if withP && !bitsEqual64(gp, wp) {
				t.Fatalf("n=%d: widened numerators differ from the scalar body's (or written past n)", n)
			}
		}
	}
}
