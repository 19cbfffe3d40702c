//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkBackwardAVX2 runs matMulT (and matMulTLoRA, "fold"; outerAcc,
// "outer", for the LoRA A and B gradients) on the
// Qwen3-0.6B layer shapes at M = 128 and 512 with the AVX2 tiles (new) and
// without them (old: the archsimd loops), alternated in rounds within one
// process (BWD2_ROUNDS, default 5; the order flips every round), on
// GOMAXPROCS cores. It reports each path's median GFLOP per CPU-second,
// the new path's share of the 256-bit FMA loop per CPU-second measured in
// the same run, and the paired medians old ÷ new of wall and CPU time
// (above 1: the tiles are faster). BWD2_OLD=outerT makes old the AVX2
// tiles without outer2Transposed (bwd2OuterT off), BWD2_OLD=prefetch the
// AVX2 tiles without the prefetching 4 × 3 tile (bwd2PrefetchNext off).
func BenchmarkBackwardAVX2(b *testing.B) {
	if !bwdAVX2 {
		b.Skip("no AVX2 tiles on this CPU (AVX-512 or no AVX2 and FMA3)")
	}
	rounds := 5
	if n, err := strconv.Atoi(os.Getenv("BWD2_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	oldT, oldPf := os.Getenv("BWD2_OLD") == "outerT", os.Getenv("BWD2_OLD") == "prefetch"
	defer func(p bool) { bwdAVX2, bwd2OuterT, bwd2PrefetchNext = true, true, p }(bwd2PrefetchNext)
	cases := []struct {
		name       string
		rows, cols int
		rank       int  // LoRA A's rows through matMulTLoRA, or 0
		bf, outer  bool // bfloat16 weights; outerAcc (rows × cols of dst)
	}{
		{"q-2048x1024", 2048, 1024, 0, false, false}, {"o-1024x2048", 1024, 2048, 0, false, false},
		{"gate-3072x1024", 3072, 1024, 0, false, false}, {"down-1024x3072", 1024, 3072, 0, false, false},
		{"down-bf16-1024x3072", 1024, 3072, 0, true, false},
		{"fold-1024x1024+32", 1024, 1024, 32, false, false}, {"loraB-3072x32", 3072, 32, 0, false, false},
		{"outerA-32x1024", 32, 1024, 0, false, true}, {"outerB-3072x32", 3072, 32, 0, false, true},
		{"outerA-32x3072", 32, 3072, 0, false, true}, {"outerB-1024x32", 1024, 32, 0, false, true},
		{"outerB-2048x32", 2048, 32, 0, false, true},
	}
	for _, tc := range cases {
		for _, m := range []int{128, 512} {
			b.Run(fmt.Sprintf("%s-M%d", tc.name, m), func(b *testing.B) {
				r := newRNG(7)
				w, _, _ := benchMat(tc.rows, tc.cols)
				if tc.bf {
					w.bf = truncBF16(w.data)
					w.data = nil
				}
				a, _, _ := benchMat(max(tc.rank, 1), tc.cols)
				ys, ts, xs := gapRows(r, m, tc.rows, true), gapRows(r, m, max(tc.rank, 1), true), gapRows(r, m, tc.cols, true)
				dst := make([]float32, tc.rows*tc.cols)
				run := func() {
					if tc.outer {
						outerAcc(dst, tc.rows, tc.cols, ys, xs)
					} else if tc.rank > 0 {
						matMulTLoRA(w, ys, a, ts, xs, true)
					} else {
						matMulT(w, ys, xs, true)
					}
				}
				flop := 2 * float64((tc.rows+tc.rank)*tc.cols*m) / 1e9
				var wall, cpu [2][]float64 // [old, new]
				for b.Loop() {
					for i := range rounds {
						for k := range 2 {
							path := (k + i) % 2
							bwdAVX2, bwd2OuterT = path == 1 || oldT || oldPf, path == 1 || oldPf
							bwd2PrefetchNext = path == 1 || !oldPf
							run() // warm the caches on this path
							c0, t0 := processCPU(), time.Now()
							run()
							wall[path] = append(wall[path], time.Since(t0).Seconds())
							cpu[path] = append(cpu[path], processCPU()-c0)
						}
					}
				}
				_, peak := bestPeak(true)
				b.ReportMetric(flop/median(cpu[0]), "GFLOP/cpu-s-old")
				b.ReportMetric(flop/median(cpu[1]), "GFLOP/cpu-s-new")
				b.ReportMetric(100*flop/median(cpu[1])/peak, "%fma-cpu-new")
				b.ReportMetric(medianRatio(wall[0], wall[1]), "old/new-wall")
				b.ReportMetric(medianRatio(cpu[0], cpu[1]), "old/new-cpu")
			})
		}
	}
}

// BenchmarkBackwardAVX2Tile runs matMulT's 4 × 3 AVX2 tile alone over a
// packed panel of kc rows (kc · 96 bytes: L1 at 256, L2 at 1024 and 3072)
// with A's four rows in L1 or L2, and reports its GFLOP per CPU-second
// and its share of the 256-bit FMA loop: the ceiling of matMulT's tiles
// on this CPU, before the batch's rows come from L3 and panels are copied.
func BenchmarkBackwardAVX2Tile(b *testing.B) {
	if !bwdAVX2 {
		b.Skip("no AVX2 tiles on this CPU (AVX-512 or no AVX2 and FMA3)")
	}
	_, peak := bestPeak(true)
	for _, kc := range []int{256, 1024, 3072} {
		b.Run(fmt.Sprintf("kc%d", kc), func(b *testing.B) {
			r := newRNG(3)
			panel, a, c := make([]float32, kc*24), make([]float32, 4*kc), make([]float32, 4*24)
			fill(panel, r, 1)
			fill(a, r, 1)
			const reps = 2000
			c0 := processCPU()
			for b.Loop() {
				for range reps {
					bwd2R4x3(&c[0], 96, &a[0], uintptr(4*kc), &panel[0], 96, kc, 8)
				}
			}
			flop := 2 * 4 * 24 * float64(kc) * reps * float64(b.N) / 1e9
			rate := flop / (processCPU() - c0)
			b.ReportMetric(rate, "GFLOP/cpu-s")
			b.ReportMetric(100*rate/peak, "%fma-cpu")
		})
	}
}
