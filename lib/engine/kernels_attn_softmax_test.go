//go:build goexperiment.simd && amd64

package engine

import (
	"math"
	"slices"
	"testing"
)

// TestSoftmaxGradPathsMatch: softmaxGrad gives the scalar loops' bits for
// the probabilities (p, and their float32 roundings in dp) and the input
// gradients (sc) on the 8-lane (softmaxGrad8), 4-lane and scalar paths,
// for lengths around the lane counts, with and without a sink logit, and
// with scores wide enough that some exponentials underflow.
func TestSoftmaxGradPathsMatch(t *testing.T) {
	defer func(old bool) { avx512 = old }(avx512)
	widths := []bool{false}
	if avx512 { // the 512-bit loops only where the CPU has them
		widths = append(widths, true)
	}
	for n := 1; n < 70; n++ {
		for _, sink := range []float32{float32(math.Inf(-1)), 0.75} {
			sc0 := randRows(1, n, uint64(n))[0]
			dp0 := randRows(1, n, uint64(n+100))[0]
			for i := range sc0 {
				sc0[i] *= float32(1 + 300*(i%3)) // some far below the maximum
			}
			run := func(vec, wide bool) ([]float64, []float32, []float32) {
				p, sc, dp := make([]float64, n), slices.Clone(sc0), slices.Clone(dp0)
				avx512 = wide
				withSIMD(vec, func() { softmaxGrad(p, sc, dp, 0.088, sink) })
				return p, sc, dp
			}
			wp, wsc, wdp := run(false, false)
			for _, wide := range widths {
				p, sc, dp := run(true, wide)
				if !bitsEqual64(p, wp) || !bitsEqual(sc, wsc) || !bitsEqual(dp, wdp) {
					t.Fatalf("n=%d sink=%v avx512=%v: differs from the scalar loops (p %v, ds %s, probabilities %s)",
						n, sink, wide, bitsEqual64(p, wp), firstDiff(sc, wsc), firstDiff(dp, wdp))
				}
			}
		}
	}
}

// TestSoftmaxRowsMatchRows: softmaxRows over a block's rows (lengths
// 1..69, so every chunking of sixteen, eight and the padded tail occurs,
// in groups of four and a partial group) gives the bits of scaleScores
// then softmaxSink per row on the scalar path, with and without sinks,
// with scores wide enough that some exponentials underflow.
func TestSoftmaxRowsMatchRows(t *testing.T) {
	for _, sinks := range [][]float32{nil, {0.5, -2, 9}} {
		var rows, want [][]float32
		for n := 1; n < 70; n++ {
			r := randRows(1, n, uint64(n+7))[0]
			for i := range r {
				r[i] *= float32(1 + 200*(i%5))
			}
			rows, want = append(rows, r), append(want, slices.Clone(r))
		}
		withSIMD(false, func() {
			for j, s := range want {
				scaleScores(s, 0.125)
				softmaxSink(s, sinks, 1+j%2)
			}
		})
		withSIMD(true, func() { softmaxRows(rows, 0.125, sinks, 1, 2) })
		for j := range rows {
			if !bitsEqual(rows[j], want[j]) {
				t.Fatalf("sinks=%v row %d (length %d): differs from the per-row softmax at %s", sinks, j, len(rows[j]), firstDiff(rows[j], want[j]))
			}
		}
	}
}

// TestSoftmaxSumIsBackwardSum: the forward softmax (softmaxRows, vector
// and scalar paths, and so softmaxSink and softmax32) gives each row
// e_t·float32(1/(Σ+sink)) with e and Σ from expScores32 as the backward
// recomputes them (sums in eight float64 lanes, not one ascending chain),
// and expScores32 returns the same Σ and numerators with p nil (the
// forward's call) as with p, on both paths, for scores wide enough that
// float64 sums are inexact and their order shows.
func TestSoftmaxSumIsBackwardSum(t *testing.T) {
	const scale = 0.125
	for _, sinks := range [][]float32{nil, {0.5, -2, 9}} {
		for n := 1; n < 70; n++ {
			r := randRows(1, n, uint64(n+31))[0]
			for i := range r {
				r[i] *= float32(1 + 150*(i%7))
			}
			sink := float32(math.Inf(-1))
			if sinks != nil {
				sink = sinks[1+n%2]
			}
			mx := max(sink, maxScaled32(r, scale))
			want, p := slices.Clone(r), make([]float64, n)
			var sum float64
			withSIMD(false, func() { sum = expScores32(p, want, scale, mx) + sinkTerm(sink, mx) })
			inv := float32(1 / sum)
			for i := range want {
				want[i] *= inv
			}
			for _, vec := range []bool{false, true} {
				e, ep := slices.Clone(r), make([]float64, n)
				var s0, s1 float64
				withSIMD(vec, func() { s0, s1 = expScores32(nil, e, scale, mx), expScores32(ep, slices.Clone(r), scale, mx) })
				if math.Float64bits(s0) != math.Float64bits(s1) || math.Float64bits(s1+sinkTerm(sink, mx)) != math.Float64bits(sum) {
					t.Fatalf("n=%d simd=%v: Σ %v without p, %v with, scalar %v", n, vec, s0, s1, sum)
				}
				got := [][]float32{slices.Clone(r)}
				withSIMD(vec, func() { softmaxRows(got, scale, sinks, 1+n%2, 1) })
				if !bitsEqual(got[0], want) {
					t.Fatalf("n=%d simd=%v sinks=%v: softmaxRows differs from e·1/Σ at %s", n, vec, sinks, firstDiff(got[0], want))
				}
			}
		}
	}
}

// TestMax16VecMatchesMax: max16Vec's two chains and overlapping tail give
// the largest score of every row length from 16 to 100, wherever it sits.
func TestMax16VecMatchesMax(t *testing.T) {
	if !avx512 {
		t.Skip("no AVX-512 on this CPU")
	}
	for n := 16; n <= 100; n++ {
		s := randRows(1, n, uint64(n))[0]
		for at := range n {
			s[at] += 50
			got, ok := max16Vec(s)
			if want := slices.Max(s); !ok || got != want {
				t.Fatalf("n=%d max at %d: max16Vec %v (ran %v), want %v", n, at, got, ok, want)
			}
			s[at] -= 50
		}
	}
}
