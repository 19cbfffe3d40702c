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
			for _, wide := range []bool{false, true} {
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

// TestSoftmaxSumRows8MatchesSerial: sumRows8 gives each row the bits of one
// ascending float64 chain plus its extra term, for eight evenly spaced
// rows (the register path, attnSumRows8) and rows that are not, on
// values whose magnitudes span enough that the order of the adds shows.
func TestSoftmaxSumRows8MatchesSerial(t *testing.T) {
	const ld = 56
	r := newRNG(5)
	slab := make([]float32, 8*ld)
	for i := range slab {
		slab[i] = float32(math.Ldexp(float64(r.uniform32()+0.5), int(r.uniform32()*120)-60))
	}
	for _, even := range []bool{true, false} {
		for base := 1; base <= 41; base += 8 {
			rows := make([][]float32, 8)
			for j := range rows {
				start := j * ld
				if !even && j == 5 {
					start++ // one row out of step
				}
				rows[j] = slab[start : start+base+j%3]
			}
			sums := [8]float64{1, 2, 3, 4, 5, 6, 7, 8}
			sumRows8(rows, &sums)
			for j, row := range rows {
				var want float64
				for _, e := range row {
					want += float64(e)
				}
				want += float64(j + 1)
				if math.Float64bits(sums[j]) != math.Float64bits(want) {
					t.Fatalf("even %v length %d row %d: %g, serial sum %g", even, len(row), j, sums[j], want)
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
