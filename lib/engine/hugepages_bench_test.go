package engine

import (
	"slices"
	"testing"
)

// BenchmarkHugePages times the forward (matMul) and backward (matMulT)
// products of the 0.6B shape's largest layer matrices against 512 vectors with the matrix in transparent huge pages
// (adviseHuge before it is written) and in 4 KiB pages, alternating the
// two copies every product so that both see the same machine; the
// figure is the ratio of the medians of CPU time, huge over small
// (below 1: huge pages are faster). See docs/engine-measurement.md.
func BenchmarkHugePages(b *testing.B) {
	const m = 512
	for _, tc := range []struct {
		name       string
		rows, cols int
	}{{"gate-3072x1024", 3072, 1024}, {"down-1024x3072", 1024, 3072}} {
		b.Run(tc.name, func(b *testing.B) {
			copyOf := func(huge bool) mat {
				d := make([]float32, tc.rows*tc.cols)
				if huge {
					adviseHuge(d)
				}
				fill(d, newRNG(3), 0.05)
				return mat{rows: tc.rows, cols: tc.cols, data: d}
			}
			ws := [2]mat{copyOf(true), copyOf(false)}
			rows := func(n, width int) [][]float32 {
				rs := rowsOf(make([]float32, n*width), n, width)
				for _, x := range rs {
					fill(x, newRNG(4), 1)
				}
				return rs
			}
			xs, ys := rows(m, tc.cols), rows(m, tc.rows)
			var fwd, bwd [2][]float64
			for b.Loop() {
				for i, w := range ws {
					c0 := processCPU()
					matMul(w, xs, ys, false)
					c1 := processCPU()
					matMulT(w, ys, xs, false)
					fwd[i] = append(fwd[i], c1-c0)
					bwd[i] = append(bwd[i], processCPU()-c1)
				}
			}
			med := func(v []float64) float64 { slices.Sort(v); return (v[(len(v)-1)/2] + v[len(v)/2]) / 2 }
			b.ReportMetric(med(fwd[0])/med(fwd[1]), "x-fwd-huge")
			b.ReportMetric(med(bwd[0])/med(bwd[1]), "x-bwd-huge")
			b.ReportMetric(2*float64(tc.rows*tc.cols*m)/med(fwd[1])/1e9, "GFLOP/cpu-s-fwd-4k")
		})
	}
}
