//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"testing"
)

// BenchmarkForwardKCAB compares matMul on every worker with rows longer
// than 1024 columns summed in pieces of other widths (fwdKC) against the
// default, on the Qwen3-0.6B shapes with K >= 2048 at M = 512 and 1024,
// the weights cold (coldMats, as in a training step): medians of paired
// ratios of process CPU time; below 1, the other width is faster.
func BenchmarkForwardKCAB(b *testing.B) {
	def := fwdKC
	defer func() { fwdKC = def }()
	for _, sh := range [][3]int{{1024, 3072, 512}, {1024, 3072, 1024}, {1024, 2048, 512}} {
		rows, cols, m := sh[0], sh[1], sh[2]
		ws, xs, ys := coldMats(rows, cols), tileRows(m, cols, 2), tileRows(m, rows, 3)
		next := 0
		run := func(kc int) func() {
			return func() {
				fwdKC = kc
				next = (next + 1) % len(ws)
				matMul(ws[next], xs, ys, false)
			}
		}
		b.Run(fmt.Sprintf("%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
			for b.Loop() {
				for _, kc := range []int{768, 1536} {
					b.ReportMetric(pairedRatioBy(processCPU, 15, run(def), run(kc)), fmt.Sprintf("cpu-%d/%d", kc, def))
				}
			}
		})
	}
}
