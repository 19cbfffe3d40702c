package engine

import (
	"fmt"
	"testing"
)

// BenchmarkProductTiles times the vector kernels alone (no scalar runs,
// no peak loop) on the Qwen3-0.6B layer shapes, in GFLOP per second of
// process CPU time: the forward product (matMul) at M = 128 and 512 and
// the backward products (matMulT, outerAcc) at M = 128 and 512. Meant for
// A/B runs of two builds interleaved on a shared machine with -cpu 1,
// where wall time says little.
func BenchmarkProductTiles(b *testing.B) {
	fwd := []struct {
		name       string
		rows, cols int
	}{{"q_proj", 2048, 1024}, {"kv_proj", 1024, 1024}, {"o_proj", 1024, 2048}, {"gate_up", 3072, 1024}, {"down", 1024, 3072}}
	for _, sh := range fwd {
		w, _ := randMats(sh.rows, sh.cols, 1)
		for _, m := range []int{128, 512} {
			xs, ys := tileRows(m, sh.cols, 2), tileRows(m, sh.rows, 3)
			b.Run(fmt.Sprintf("fwd/%s-%dx%d/M=%d", sh.name, sh.rows, sh.cols, m), func(b *testing.B) {
				cpuRate(b, 2*float64(sh.rows*sh.cols*m), func() { matMul(w, xs, ys, false) })
			})
		}
	}
	bwd := []struct {
		name       string
		rows, cols int
		outer      bool
	}{
		{"matMulT-3072x1024", 3072, 1024, false},
		{"matMulT-1024x3072", 1024, 3072, false},
		{"matMulT-2048x1024", 2048, 1024, false},
		{"outerAcc-3072x32", 3072, 32, true},
		{"outerAcc-32x1024", 32, 1024, true},
	}
	for _, tc := range bwd {
		w, _, _ := benchMat(tc.rows, tc.cols)
		for _, m := range []int{128, 512} {
			ys, xs := tileRows(m, tc.rows, 4), tileRows(m, tc.cols, 5)
			dst := make([]float32, tc.rows*tc.cols)
			run := func() { matMulT(w, ys, xs, true) }
			if tc.outer {
				run = func() { outerAcc(dst, tc.rows, tc.cols, ys, xs) }
			}
			b.Run(fmt.Sprintf("bwd/%s/M=%d", tc.name, m), func(b *testing.B) {
				cpuRate(b, 2*float64(tc.rows*tc.cols*m), run)
			})
		}
	}
}

// tileRows is n rows of width random values (randRows is amd64-only).
func tileRows(n, width int, seed uint64) [][]float32 {
	rs := rowsOf(make([]float32, n*width), n, width)
	r := newRNG(seed)
	for _, x := range rs {
		fill(x, r, 1)
	}
	return rs
}

// cpuRate runs fn once untimed, then b.N times, and reports flop per
// second of process CPU time in GFLOP: the mean, and the best run (other
// processes only ever slow a run down, by evicting its caches).
func cpuRate(b *testing.B, flop float64, fn func()) {
	fn()
	best, total := 0.0, 0.0
	for b.Loop() {
		c0 := processCPU()
		fn()
		c := processCPU() - c0
		best, total = max(best, flop/c), total+c
	}
	b.ReportMetric(flop*float64(b.N)/total/1e9, "GFLOP/cpu-s")
	b.ReportMetric(best/1e9, "GFLOP/cpu-s-best")
}
