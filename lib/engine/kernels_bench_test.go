package engine

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// truncBF16 returns data's bfloat16 halves (each float32 truncated to
// its upper 16 bits), for matrices held as bfloat16.
func truncBF16(data []float32) []uint16 {
	h := make([]uint16, len(data))
	for i, v := range data {
		h[i] = uint16(math.Float32bits(v) >> 16)
	}
	return h
}

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

// BenchmarkMatVec measures the engine's matrix-vector product (all cores,
// as used by the forward pass), the same kernel on one goroutine, the
// bfloat16-weight kernel (all cores), and a
// plain Go reference loop, in the same run, reporting GFLOP/s and the
// kernel's speed-up over the reference.
func BenchmarkMatVec(b *testing.B) {
	for _, sz := range [][2]int{{384, 128}, {2048, 2048}, {8192, 2048}} {
		w, x, y := benchMat(sz[0], sz[1])
		flop := float64(2 * sz[0] * sz[1])
		b.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(b *testing.B) {
			xs, ys := [][]float32{x}, [][]float32{y}
			wb := mat{rows: w.rows, cols: w.cols, bf: truncBF16(w.data)}
			var kernel, serial, bf, ref time.Duration
			for b.Loop() {
				t0 := time.Now()
				matMul(w, xs, ys, false)
				t1 := time.Now()
				matRows(w, xs, ys, 0, w.rows, false)
				t2 := time.Now()
				matMul(wb, xs, ys, false)
				t3 := time.Now()
				matVecReference(w, x, y)
				kernel, serial, bf, ref = kernel+t1.Sub(t0), serial+t2.Sub(t1), bf+t3.Sub(t2), ref+time.Since(t3)
			}
			n := float64(b.N)
			b.ReportMetric(flop*n/kernel.Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(flop*n/serial.Seconds()/1e9, "GFLOP/s-1core")
			b.ReportMetric(flop*n/bf.Seconds()/1e9, "GFLOP/s-bf16")
			b.ReportMetric(flop*n/ref.Seconds()/1e9, "GFLOP/s-ref")
			b.ReportMetric(ref.Seconds()/kernel.Seconds(), "x-ref")
		})
	}
}
