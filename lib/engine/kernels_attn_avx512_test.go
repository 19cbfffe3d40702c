//go:build goexperiment.simd && amd64

package engine

import (
	"math"
	"testing"
)

// TestExp8MatchesScalar: the 8-lane exponentials give exp64's bits on
// values across its range, its clamps and non-finite inputs.
func TestExp8MatchesScalar(t *testing.T) {
	if !avx512 {
		t.Skip("no AVX-512 on this CPU")
	}
	xs := []float64{0, -0.5, 1e-9, -1e-300, 3.7, -17.25, 88.7, 700, 709.5, -707.9, -708.5, -1e4,
		math.Inf(1), math.Inf(-1), math.NaN(), 2, -3, 40}
	r := newRNG(3)
	for range 64 {
		xs = append(xs, float64(r.uniform32()*60-30))
	}
	p := append([]float64(nil), xs...)
	if n := expShift64x8(p, 1.5); n != len(p)&^7 {
		t.Fatalf("expShift64x8 did %d of %d", n, len(p))
	}
	f := make([]float32, len(xs))
	for i, x := range xs {
		f[i] = float32(x)
	}
	g := append([]float32(nil), f...)
	expShift32x8(g, 1.5)
	for i := range len(xs) &^ 7 {
		want := exp64(xs[i] - 1.5)
		if math.Float64bits(p[i]) != math.Float64bits(want) && !(math.IsNaN(p[i]) && math.IsNaN(want)) {
			t.Errorf("expShift64x8(%g) = %g, exp64 %g", xs[i], p[i], want)
		}
		w32 := float32(exp64(float64(f[i] - 1.5)))
		if math.Float32bits(g[i]) != math.Float32bits(w32) && !(g[i] != g[i] && w32 != w32) {
			t.Errorf("expShift32x8(%g) = %g, exp64 %g", f[i], g[i], w32)
		}
	}
}

// BenchmarkSoftmaxExp times softmax's exponentials over 2048 scores
// (float32 as the forward takes them, float64 as the backward does) on
// the 8-lane kernels and the 4-lane ones, in CPU-ns an element.
func BenchmarkSoftmaxExp(b *testing.B) {
	x := randRows(1, 2048, 1)[0]
	for _, lanes := range []int{8, 4} {
		b.Run(map[int]string{8: "x8", 4: "x4"}[lanes], func(b *testing.B) {
			defer func(old bool) { avx512 = old }(avx512)
			avx512 = avx512 && lanes == 8
			y, z := make([]float32, len(x)), make([]float64, len(x))
			c0 := processCPU()
			for b.Loop() {
				copy(y, x)
				expShift32(y, 3)
				for i, v := range x {
					z[i] = float64(v)
				}
				expShift64(z, 3)
			}
			b.ReportMetric((processCPU()-c0)*1e9/float64(2*b.N*len(x)), "cpu-ns/elem")
		})
	}
}
