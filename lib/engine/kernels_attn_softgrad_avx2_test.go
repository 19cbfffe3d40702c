//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// TestSoftmaxGradAVX2MatchesLoops: without AVX-512, softmaxGrad's fused
// path (softmaxGradY: softmaxGrad8 on pairs of 4-lane vectors) gives the
// bits of the 4-lane passes and scalar loops it replaced, for the
// probabilities (p), their float32 roundings (dp) and the input
// gradients (sc): lengths 1-69 (every remainder of eight, and the short
// rows it leaves to them), with and without a sink, with scores wide
// enough that some exponentials underflow. On AVX-512 machines it runs
// with the 512-bit kernels off.
func TestSoftmaxGradAVX2MatchesLoops(t *testing.T) {
	if !simdOK {
		t.Skip("no AVX2 and FMA on this CPU")
	}
	defer func(a, y bool) { avx512, softmaxGradY = a, y }(avx512, softmaxGradY)
	avx512 = false
	for n := 1; n < 70; n++ {
		for _, sink := range []float32{float32(math.Inf(-1)), 0.75, 40} {
			sc0 := randRows(1, n, uint64(n+7))[0]
			dp0 := randRows(1, n, uint64(n+300))[0]
			for i := range sc0 {
				sc0[i] *= float32(1 + 300*(i%3))
			}
			run := func(fused bool) ([]float64, []float32, []float32) {
				p, sc, dp := make([]float64, n), slices.Clone(sc0), slices.Clone(dp0)
				softmaxGradY = fused
				withSIMD(true, func() { softmaxGrad(p, sc, dp, 0.088, sink) })
				return p, sc, dp
			}
			wp, wsc, wdp := run(false)
			p, sc, dp := run(true)
			if !bitsEqual64(p, wp) || !bitsEqual(sc, wsc) || !bitsEqual(dp, wdp) {
				t.Fatalf("n=%d sink=%v: the fused path differs (p %v, ds %s, probabilities %s)",
					n, sink, bitsEqual64(p, wp), firstDiff(sc, wsc), firstDiff(dp, wdp))
			}
		}
	}
}

// BenchmarkSoftmaxGradAVX2 times softmaxGrad on rows of 512 and 2048
// keys with softmaxGradY on and off in alternation, in one process, the
// 512-bit kernels off, and reports the fused path's CPU-ns per row and
// the median and range of the paired off/on CPU ratios (above 1: the
// fused path wins). Each timed batch restores the row first, as the
// backward hands softmaxGrad fresh scores.
func BenchmarkSoftmaxGradAVX2(b *testing.B) {
	if !simdOK {
		b.Skip("no AVX2 and FMA on this CPU")
	}
	defer func(a, y bool) { avx512, softmaxGradY = a, y }(avx512, softmaxGradY)
	avx512 = false
	for _, n := range []int{512, 2048} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			const batch = 500
			sc0, dp0 := randRows(1, n, 1)[0], randRows(1, n, 2)[0]
			p, sc, dp := make([]float64, n), make([]float32, n), make([]float32, n)
			var on, ratios []float64
			for b.Loop() {
				var cpu [2]float64
				for i, fused := range []bool{true, false} {
					softmaxGradY = fused
					c0 := processCPU()
					for range batch {
						copy(sc, sc0)
						copy(dp, dp0)
						softmaxGrad(p, sc, dp, 0.088, float32(math.Inf(-1)))
					}
					cpu[i] = processCPU() - c0
				}
				on, ratios = append(on, cpu[0]/batch), append(ratios, cpu[1]/cpu[0])
			}
			slices.Sort(on)
			slices.Sort(ratios)
			b.ReportMetric(on[len(on)/2]*1e9, "cpu-ns/row")
			b.ReportMetric(ratios[len(ratios)/2], "x-cpu")
			b.ReportMetric(ratios[0], "x-cpu-min")
			b.ReportMetric(ratios[len(ratios)-1], "x-cpu-max")
		})
	}
}
