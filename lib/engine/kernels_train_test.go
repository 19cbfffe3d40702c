package engine

import (
	"math"
	"runtime"
	"slices"
	"testing"
)

// matMulT against float64 sums, bit-identical for bfloat16 weights (widened
// exactly) and for any number of goroutines, for wide and narrow matrices.
func TestMatMulT(t *testing.T) {
	for _, sz := range [][3]int{{300, 600, 5}, {1000, 32, 9}, {7, 3, 2}} {
		rows, cols, n := sz[0], sz[1], sz[2]
		w, _, _ := benchMat(rows, cols)
		wb := mat{rows: rows, cols: cols, bf: make([]uint16, len(w.data))}
		for i, v := range w.data {
			wb.bf[i] = uint16(math.Float32bits(v) >> 16)
			w.data[i] = math.Float32frombits(uint32(wb.bf[i]) << 16)
		}
		r := newRNG(3)
		ys := rowsOf(make([]float32, n*rows), n, rows)
		for _, y := range ys {
			fill(y, r, 1)
		}
		run := func(m mat, procs int) []float32 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			out := make([]float32, n*cols)
			matMulT(m, ys, rowsOf(out, n, cols), false)
			return out
		}
		got := run(w, 2)
		for _, other := range [][]float32{run(w, 1), run(wb, 2), run(wb, 3)} {
			if !slices.Equal(got, other) {
				t.Fatalf("%v: results differ between goroutine splits or weight formats", sz)
			}
		}
		for b := range n {
			for i := range cols {
				var s float64
				for j := range rows {
					s += float64(ys[b][j]) * float64(w.data[j*cols+i])
				}
				if math.Abs(float64(got[b*cols+i])-s) > 1e-4*math.Sqrt(float64(rows)) {
					t.Fatalf("%v: element [%d][%d] = %v, want %v", sz, b, i, got[b*cols+i], s)
				}
			}
		}
	}
}
