//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"testing"
)

// BenchmarkForwardL1AheadAB compares the tiles' last group prefetching
// the next piece's rows into L1 (fwdL1Ahead, b) with it prefetching its
// own rows (a): matMul on every worker, the 0.6B shapes at M = 512, W
// cold (coldMats): medians of paired ratios b/a of process CPU time;
// below 1 the prefetch is faster.
func BenchmarkForwardL1AheadAB(b *testing.B) {
	defer func(on bool) { fwdL1Ahead = on }(fwdL1Ahead)
	for _, sh := range [][3]int{{2048, 1024, 512}, {3072, 1024, 512}, {1024, 2048, 512}, {1024, 3072, 512}, {15360, 1024, 128}} {
		rows, cols, m := sh[0], sh[1], sh[2]
		ws, xs, ys := coldMats(rows, cols), tileRows(m, cols, 2), tileRows(m, rows, 3)
		next := 0
		run := func(on bool) func() {
			return func() {
				fwdL1Ahead = on
				next = (next + 1) % len(ws)
				matMul(ws[next], xs, ys, false)
			}
		}
		b.Run(fmt.Sprintf("%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
			for b.Loop() {
				b.ReportMetric(pairedRatioBy(processCPU, 15, run(false), run(true)), "cpu-ahead/own")
			}
		})
	}
}
