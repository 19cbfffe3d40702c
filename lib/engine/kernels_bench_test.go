package engine

import (
	"fmt"
	"testing"
)

func benchMat(rows, cols int) (mat, []float32, []float32) {
	r := newRNG(1)
	w := mat{rows: rows, cols: cols, data: make([]float32, rows*cols)}
	for i := range w.data {
		w.data[i] = r.uniform32() - 0.5
	}
	x := make([]float32, cols)
	for i := range x {
		x[i] = r.uniform32() - 0.5
	}
	return w, x, make([]float32, rows)
}

func BenchmarkMatVec(b *testing.B) {
	for _, sz := range [][2]int{{128, 128}, {384, 128}, {2048, 2048}, {8192, 2048}} {
		w, x, y := benchMat(sz[0], sz[1])
		flop := float64(2 * sz[0] * sz[1])
		b.Run(fmt.Sprintf("kernel/%dx%d", sz[0], sz[1]), func(b *testing.B) {
			for b.Loop() {
				matMul(w, [][]float32{x}, [][]float32{y}, false)
			}
			b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(fmt.Sprintf("serial/%dx%d", sz[0], sz[1]), func(b *testing.B) {
			for b.Loop() {
				matRows(w, [][]float32{x}, [][]float32{y}, 0, w.rows, false)
			}
			b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(fmt.Sprintf("reference/%dx%d", sz[0], sz[1]), func(b *testing.B) {
			for b.Loop() {
				matVecReference(w, x, y)
			}
			b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
