package engine

import (
	"math"
	"testing"
)

// TestMatMulGroupMatchesMatMul runs matMulGroup on the matrices a layer
// reads the same vectors with (rows past the last 16-row block, float32
// and bfloat16 weights, one to five vectors: decoding's one fork and the
// batch's matrix-at-a-time path) and requires the bits of matMul on each
// matrix alone, on every row of every output.
func TestMatMulGroupMatchesMatMul(t *testing.T) {
	shapes := [][2]int{{512, 256}, {256, 256}, {200, 256}, {40, 256}}
	for _, bf := range []bool{false, true} {
		var ms []mat
		for i, sh := range shapes {
			w, wb := randMats(sh[0], sh[1], uint64(i+1))
			if bf {
				w = wb
			}
			ms = append(ms, w)
		}
		for m := 1; m <= 5; m++ {
			xs := tileRows(m, 256, uint64(10+m))
			yss, want := make([][][]float32, len(ms)), make([][][]float32, len(ms))
			for i, w := range ms {
				yss[i], want[i] = tileRows(m, w.rows, 1), tileRows(m, w.rows, 2)
				matMul(w, xs, want[i], false)
			}
			matMulGroup(ms, xs, yss)
			for i := range ms {
				for b := range xs {
					for j, v := range want[i][b] {
						if got := yss[i][b][j]; math.Float32bits(got) != math.Float32bits(v) {
							t.Fatalf("bf16 %v, %d vectors: matrix %d vector %d row %d = %g, matMul %g", bf, m, i, b, j, got, v)
						}
					}
				}
			}
		}
	}
}
