package engine

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkGEMMAVX2 measures the forward product (ys = W·xs over M
// vectors, all cores) on the Qwen3-0.6B layer shapes with the AVX2
// kernels, next to the AVX-512 ones (where the CPU has them) and the
// scalar reference in the same run: GFLOP/s of each and the ratios. The
// AVX2 products run back to back under b.Loop, the others for a fixed
// time after them.
func BenchmarkGEMMAVX2(b *testing.B) {
	shapes := []struct {
		name       string
		rows, cols int
	}{{"q_proj", 2048, 1024}, {"kv_proj", 1024, 1024}, {"o_proj", 1024, 2048}, {"gate_up", 3072, 1024}, {"down", 1024, 3072}}
	for _, sh := range shapes {
		w, wb, xs := fwdCase(sh.rows, sh.cols, 128, 2)
		for _, bf := range []bool{false, true} {
			mm := w
			if bf {
				mm = wb
			}
			for _, m := range []int{1, 8, 128} {
				ys := rowsOf(make([]float32, m*sh.rows), m, sh.rows)
				run := func() { matMul(mm, xs[:m], ys, false) }
				flop := 2 * float64(sh.rows*sh.cols*m)
				b.Run(fmt.Sprintf("%s-%dx%d/bf16=%v/M=%d", sh.name, sh.rows, sh.cols, bf, m), func(b *testing.B) {
					reportAVX2(b, flop, run, 1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkDecodeAVX2 measures one-vector products on a 311 MB bfloat16
// matrix (Qwen3-0.6B's lm_head, 151936×1024: it does not fit a cache) in
// GB/s of weights read, AVX2 next to AVX-512 and scalar, and the read
// bandwidth over the same matrix (fastestRead; GB/s-read, the mean of the
// probes before and after the products) in the same run.
func BenchmarkDecodeAVX2(b *testing.B) {
	_, wb, xs := fwdCase(151936, 1024, 1, 3)
	ys := [][]float32{make([]float32, wb.rows)}
	bytes := float64(2 * wb.rows * wb.cols)
	words := [][]uint64{bf16Words(wb.bf)}
	b.Run("lm_head-151936x1024/bf16/M=1", func(b *testing.B) {
		before, _ := fastestRead(words)
		reportAVX2(b, bytes, func() { matMul(wb, xs, ys, false) }, 1e9, "GB/s")
		after, _ := fastestRead(words)
		b.ReportMetric((before+after)/2/1e9, "GB/s-read")
	})
}

// reportAVX2 times run with the AVX2 kernels, the default vector kernels
// and the scalar ones, and reports work/s (divided by scale) for each.
func reportAVX2(b *testing.B, work float64, run func(), scale float64, unit string) {
	var avx2 time.Duration
	withAVX2Bench(b, func() {
		t0 := time.Now()
		for b.Loop() {
			run()
		}
		avx2 = time.Since(t0)
	})
	rate := work * float64(b.N) / avx2.Seconds() / scale
	b.ReportMetric(rate, unit+"-avx2")
	if fwdAsm {
		r512 := work / timePerRun(run) / scale
		b.ReportMetric(r512, unit+"-avx512")
		b.ReportMetric(rate/r512, "x-avx512")
	}
	defer func(s bool) { useSIMD = s }(useSIMD)
	useSIMD = false
	scalar := work / timePerRun(run) / scale
	b.ReportMetric(scalar, unit+"-scalar")
	b.ReportMetric(rate/scalar, "x-scalar")
}

// timePerRun runs run for at least 300 ms (and at least twice) and
// returns seconds per run.
func timePerRun(run func()) float64 {
	run()
	n, t0 := 0, time.Now()
	for n < 1 || time.Since(t0) < 300*time.Millisecond {
		run()
		n++
	}
	return time.Since(t0).Seconds() / float64(n)
}

func withAVX2Bench(b *testing.B, fn func()) {
	defer func(a, s bool) { fwdAVX2, useSIMD = a, s }(fwdAVX2, useSIMD)
	fwdAVX2, useSIMD = true, true
	fn()
}

// gemmRound runs one warm-up of run, then run at least minN times and for
// at least minDur, and returns its GFLOP per second and per CPU-second
// (flop each run): one round of the interleaved product benchmarks.
func gemmRound(run func(), flop float64, minN int, minDur time.Duration) (wall, cpu float64) {
	run()
	n, t0, c0 := 0, time.Now(), processCPU()
	for n < minN || time.Since(t0) < minDur {
		run()
		n++
	}
	return flop * float64(n) / time.Since(t0).Seconds() / 1e9, flop * float64(n) / (processCPU() - c0) / 1e9
}
