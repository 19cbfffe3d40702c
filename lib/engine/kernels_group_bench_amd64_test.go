//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"testing"
)

// BenchmarkPrefillGroupPackAB compares a prefill's products over one
// batch (q, k and v; gate and up) on the batch packed once
// (matMulGroup, packedIn) with each matrix packing it (matMul, as
// before): the 0.6B shapes at M = 512, W cold, every worker; the median
// of paired ratios of process CPU time, once over each; below 1, packing
// once is faster.
func BenchmarkPrefillGroupPackAB(b *testing.B) {
	const cols, m = 1024, 512
	xs := tileRows(m, cols, 2)
	for _, set := range [][]int{{2048, 1024, 1024}, {3072, 3072}} {
		wss, yss := make([][]mat, len(set)), make([][][]float32, len(set))
		for i, rows := range set {
			wss[i], yss[i] = coldMats(rows, cols), tileRows(m, rows, 3)
		}
		next := 0
		ms := func() []mat {
			next++
			ms := make([]mat, len(wss))
			for i, ws := range wss {
				ms[i] = ws[next%len(ws)]
			}
			return ms
		}
		each := func() {
			for i, w := range ms() {
				matMul(w, xs, yss[i], false)
			}
		}
		group := func() { matMulGroup(ms(), xs, yss) }
		b.Run(fmt.Sprintf("%v/M=%d", set, m), func(b *testing.B) {
			for b.Loop() {
				b.ReportMetric(pairedRatioBy(processCPU, 11, each, group), "cpu-once/each")
			}
		})
	}
}
