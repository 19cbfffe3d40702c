//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"runtime"
	"simd/archsimd"
	"sync"
	"testing"
	"time"
)

// BenchmarkGEMM measures the forward matrix product (ys = W·xs over M
// vectors, all cores) on the Qwen3-0.6B layer shapes, with the vector
// kernels and (not with -short) with the scalar ones in the same run,
// next to the CPU's peak measured by peakLoop (all cores) just before
// each product (the
// VM's speed drifts over minutes, and a neighbour can hold a core for
// seconds): GFLOP/s and the fraction of the FMA peak, by wall time and by
// CPU time. The FMA peak is at the CPU's widest vectors (widestFMAPeak:
// 512-bit where it has AVX-512; fma-peak-bits says which); the 256-bit
// mul+add peak is the ceiling for kernels that may not fuse.
func BenchmarkGEMM(b *testing.B) {
	shapes := []struct {
		name       string
		rows, cols int
	}{{"q_proj", 2048, 1024}, {"kv_proj", 1024, 1024}, {"o_proj", 1024, 2048}, {"gate_up", 3072, 1024}, {"down", 1024, 3072}}
	for _, sh := range shapes {
		w, _ := randMats(sh.rows, sh.cols, 1)
		for _, m := range []int{1, 8, 128, 512} {
			xs, ys := randRows(m, sh.cols, 2), randRows(m, sh.rows, 3)
			flop := 2 * float64(sh.rows*sh.cols*m)
			b.Run(fmt.Sprintf("%s-%dx%d/M=%d", sh.name, sh.rows, sh.cols, m), func(b *testing.B) {
				// The vector products run back to back after one untimed
				// run, then the scalar ones: interleaved, each scalar run
				// (tens of times longer) evicted the caches and let the
				// other cores sleep, so the vector run after it measured
				// a cold start, as did the first run after the previous
				// shape's scalar runs.
				var vec, scalar time.Duration
				var cpu float64
				fma, fmaCPU, bits := widestFMAPeak()
				muladd, _ := bestPeak(false)
				withSIMD(true, func() {
					matMul(w, xs, ys, false)
					c0 := processCPU()
					t0 := time.Now()
					for b.Loop() {
						matMul(w, xs, ys, false)
					}
					vec, cpu = time.Since(t0), processCPU()-c0
				})
				n := float64(b.N)
				// -short leaves the scalar runs out: on amd64 they round
				// every multiply-add in software (fma32Soft), minutes a
				// shape at M = 512.
				if !testing.Short() {
					withSIMD(false, func() {
						t0 := time.Now()
						for range b.N {
							matMul(w, xs, ys, false)
						}
						scalar = time.Since(t0)
					})
					b.ReportMetric(flop*n/scalar.Seconds()/1e9, "GFLOP/s-scalar")
					b.ReportMetric(scalar.Seconds()/vec.Seconds(), "x-scalar")
				}
				b.ReportMetric(flop*n/vec.Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(flop*n/cpu/1e9, "GFLOP/cpu-s")
				b.ReportMetric(fma, "GFLOP/s-fma-peak")
				b.ReportMetric(float64(bits), "fma-peak-bits")
				b.ReportMetric(muladd, "GFLOP/s-mul+add-peak")
				b.ReportMetric(100*flop*n/vec.Seconds()/1e9/fma, "%fma-peak")
				b.ReportMetric(fmaCPU, "GFLOP/cpu-s-fma-peak")
				b.ReportMetric(100*flop*n/cpu/1e9/fmaCPU, "%fma-peak-cpu")
			})
		}
	}
}

// bestPeak is the best of three peakLoop runs: one run now and then came
// out at half the usual figure (a frequency dip of the VM), which made the
// products look faster than the peak.
func bestPeak(fused bool) (wall, perCPU float64) {
	for range 3 {
		w, c := peakLoop(fused)
		wall, perCPU = max(wall, w), max(perCPU, c)
	}
	return wall, perCPU
}

// peakLoop measures the CPU's 8-lane floating-point peak in GFLOP/s on
// every core: ten independent chains of fused multiply-adds (fused), or
// seven chains of multiplies each feeding one of seven chains of adds, the
// pattern of the kernels that may not fuse; per second of wall time and
// per second of process CPU time (the figure a loaded machine distorts
// least). Both loops compile to their vector instructions and a counter,
// nothing else (objdump -d of the test binary shows it).
func peakLoop(fused bool) (wall, perCPU float64) {
	const iters = 20_000_000
	procs := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	sink := make([]float32, 8*procs)
	c0 := processCPU()
	t0 := time.Now()
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if fused {
				fmaChains(iters, sink[8*p:8*p+8])
			} else {
				mulAddChains(iters, sink[8*p:8*p+8])
			}
		}()
	}
	wg.Wait()
	per := 10 * 8 * 2
	if !fused {
		per = 7 * 8 * 2
	}
	flop := float64(per) * iters * float64(procs) / 1e9
	return flop / time.Since(t0).Seconds(), flop / (processCPU() - c0)
}

func fmaChains(iters int, out []float32) {
	c, d := archsimd.BroadcastFloat32x8(0.999), archsimd.BroadcastFloat32x8(0.001)
	a0, a1, a2, a3, a4 := chainStart(0), chainStart(1), chainStart(2), chainStart(3), chainStart(4)
	a5, a6, a7, a8, a9 := chainStart(5), chainStart(6), chainStart(7), chainStart(8), chainStart(9)
	for range iters {
		a0, a1, a2, a3, a4 = a0.MulAdd(c, d), a1.MulAdd(c, d), a2.MulAdd(c, d), a3.MulAdd(c, d), a4.MulAdd(c, d)
		a5, a6, a7, a8, a9 = a5.MulAdd(c, d), a6.MulAdd(c, d), a7.MulAdd(c, d), a8.MulAdd(c, d), a9.MulAdd(c, d)
	}
	s := a0.Add(a1).Add(a2).Add(a3).Add(a4).Add(a5).Add(a6).Add(a7).Add(a8).Add(a9)
	s.Store((*[8]float32)(out))
}

// chainStart is chain i's starting value. The chains must start apart:
// started equal (all zero), they compute the same values, and the
// compiler kept one chain and added it ten times at the end, so the loop
// timed one dependent multiply-add per iteration, its latency, and
// reported 277-288 GFLOP/s on a machine whose two cores retire 223-234.
func chainStart(i int) archsimd.Float32x8 { return archsimd.BroadcastFloat32x8(float32(i + 1)) }

func mulAddChains(iters int, out []float32) {
	c := archsimd.BroadcastFloat32x8(1.0000001)
	x0, x1, x2, x3, x4, x5, x6 := chainStart(0), chainStart(1), chainStart(2), chainStart(3), chainStart(4), chainStart(5), chainStart(6)
	var a0, a1, a2, a3, a4, a5, a6 archsimd.Float32x8
	for range iters {
		x0, x1, x2, x3, x4, x5, x6 = x0.Mul(c), x1.Mul(c), x2.Mul(c), x3.Mul(c), x4.Mul(c), x5.Mul(c), x6.Mul(c)
		a0, a1, a2, a3, a4, a5, a6 = a0.Add(x0), a1.Add(x1), a2.Add(x2), a3.Add(x3), a4.Add(x4), a5.Add(x5), a6.Add(x6)
	}
	s := a0.Add(a1).Add(a2).Add(a3).Add(a4).Add(a5).Add(a6)
	s.Store((*[8]float32)(out))
}
