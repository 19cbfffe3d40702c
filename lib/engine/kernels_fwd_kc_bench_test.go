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

// BenchmarkForwardKBlockAB compares matMul on every worker with rows
// longer than fwdKC taken piece by piece over a block of tiles
// (fwdTilesKBlocked, b) against tile by tile (a), on the same shapes as
// BenchmarkForwardKCAB with the weights cold: medians of paired ratios of
// process CPU time b/a (ab) and, run in the other order, a/b (ba); below
// 1 (ab) and above 1 (ba), the blocked order is faster.
func BenchmarkForwardKBlockAB(b *testing.B) {
	def := fwdKBlock
	defer func() { fwdKBlock = def }()
	for _, sh := range [][3]int{{1024, 3072, 512}, {1024, 3072, 1024}, {1024, 2048, 512}, {1024, 3072, 256}} {
		rows, cols, m := sh[0], sh[1], sh[2]
		ws, xs, ys := coldMats(rows, cols), tileRows(m, cols, 2), tileRows(m, rows, 3)
		next := 0
		run := func(kb bool) func() {
			return func() {
				fwdKBlock = kb
				next = (next + 1) % len(ws)
				matMul(ws[next], xs, ys, false)
			}
		}
		b.Run(fmt.Sprintf("%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
			for b.Loop() {
				b.ReportMetric(pairedRatioBy(processCPU, 21, run(false), run(true)), "cpu-ab")
				b.ReportMetric(pairedRatioBy(processCPU, 21, run(true), run(false)), "cpu-ba")
			}
		})
	}
}
