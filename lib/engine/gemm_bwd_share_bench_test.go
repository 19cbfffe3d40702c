//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"math"
	"runtime"
	"testing"
)

// BenchmarkBackwardFMAShare reports, on one thread, matMulT's rate as a
// share of the 512-bit FMA loop's (fmaChains16, the same FLOPs, run right
// before it: the median of paired ratios of thread CPU time) on the
// Qwen3-0.6B shapes at M = 512, 1024 and 2048, each call on the next of
// enough copies of W (384 MiB in all) that W comes from DRAM, as in a
// training step. Its figure is comparable across builds run interleaved
// on a loaded machine. Run with -cpu 1 -benchtime 1x.
func BenchmarkBackwardFMAShare(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sink := make([]float32, 16)
	for _, sh := range [][2]int{{3072, 1024}, {1024, 3072}, {2048, 1024}, {1024, 2048}} {
		rows, cols := sh[0], sh[1]
		ws := make([]mat, (384<<20)/(4*rows*cols))
		bs := make([]mat, len(ws)) // the same values in bfloat16
		for i := range ws {
			ws[i], _ = randMats(rows, cols, uint64(i))
			bs[i] = mat{rows: rows, cols: cols, bf: make([]uint16, rows*cols)}
			for j, v := range ws[i].data {
				bs[i].bf[j] = uint16(math.Float32bits(v) >> 16)
				ws[i].data[j] = math.Float32frombits(uint32(bs[i].bf[j]) << 16)
			}
		}
		for _, m := range []int{512, 1024, 2048} {
			xs, ys := tileRows(m, cols, 2), tileRows(m, rows, 3)
			i := 0
			prod := func() { matMulT(ws[i%len(ws)], ys, xs, false); i++ }
			loop := func() { fmaChains16(rows*cols*m/(10*16), sink) }
			hot := func() { matMulT(ws[0], ys, xs, false) }
			bf := func() { matMulT(bs[i%len(bs)], ys, xs, false); i++ }
			b.Run(fmt.Sprintf("%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
				for b.Loop() {
					b.ReportMetric(1/pairedRatio(9, loop, prod), "of-fma-loop")
					b.ReportMetric(1/pairedRatio(9, loop, hot), "hotW")
					b.ReportMetric(pairedRatio(9, prod, bf), "bf16/f32")
				}
			})
		}
	}
}
