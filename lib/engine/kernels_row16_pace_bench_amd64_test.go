//go:build goexperiment.simd && amd64

package engine

import (
	"math"
	"runtime"
	"sync"
	"testing"
)

// BenchmarkRow16Pacing compares the bfloat16 decoding kernel with its
// pacing shuffle (fwdRow16BF16, row16Pace in the generator) against the
// same kernel without it (fwdRow16BF16Unpaced): medians of paired ratios,
// the unpaced kernel's time over the paced one's (above 1: pacing
// faster), over 480 MB of matrices of the Qwen3-0.6B layer shapes carved
// from huge pages as loading does, on one thread (thread CPU time) and on
// two (process CPU and wall), and hot (512 KiB of rows in L2, the loop's
// own cost, where pacing is slower by design). Pacing pays where the
// loop's L2 rate is well above its memory rate: re-measure it on a new
// host. Run with -benchtime 1x.
func BenchmarkRow16Pacing(b *testing.B) {
	var slab hugeSlab
	type matrix struct {
		w          []uint16
		rows, cols int
	}
	var ms []matrix
	r := newRNG(3)
	for range 16 {
		for _, sh := range [][2]int{{2048, 1024}, {1024, 1024}, {1024, 1024}, {1024, 2048}, {3072, 1024}, {3072, 1024}, {1024, 3072}} {
			w := hugeSlabAlloc[uint16](&slab, sh[0]*sh[1])
			for i := range w {
				w[i] = uint16(math.Float32bits(float32(2*r.float64()-1)) >> 16)
			}
			ms = append(ms, matrix{w, sh[0], sh[1]})
		}
	}
	x := make([]float32, 3072)
	fill(x, r, 1)
	type kernel = func(x *float32, w *uint16, stride, n int, out *[16]float32)
	pass := func(k kernel, part, parts int) {
		var out [16]float32
		for i := part; i < len(ms); i += parts {
			m := ms[i]
			for j := 0; j < m.rows; j += 16 {
				k(&x[0], &m.w[j*m.cols], m.cols, m.cols, &out)
			}
		}
	}
	one := func(k kernel) func() { return func() { pass(k, 0, 1) } }
	two := func(k kernel) func() {
		return func() {
			var wg sync.WaitGroup
			for p := range 2 {
				wg.Go(func() { pass(k, p, 2) })
			}
			wg.Wait()
		}
	}
	hot := func(k kernel) func() {
		return func() {
			var out [16]float32
			for range 60 {
				for i := range 16 {
					k(&x[0], &ms[0].w[i*16*1024], 1024, 1024, &out)
				}
			}
		}
	}
	paced, unpaced := fwdRow16BF16, fwdRow16BF16Unpaced
	for b.Loop() {
		runtime.LockOSThread()
		b.ReportMetric(pairedRatio(15, hot(paced), hot(unpaced)), "x-hot")
		b.ReportMetric(pairedRatio(15, one(paced), one(unpaced)), "x-mem-1t")
		runtime.UnlockOSThread()
		b.ReportMetric(pairedRatioBy(processCPU, 15, two(paced), two(unpaced)), "x-mem-2t-cpu")
		b.ReportMetric(pairedRatioBy(wallClock, 15, two(paced), two(unpaced)), "x-mem-2t-wall")
	}
}
