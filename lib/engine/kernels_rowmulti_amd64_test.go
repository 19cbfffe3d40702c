package engine

import (
	"fmt"
	"math"
	"testing"
)

// TestRowMultiMatchesRowLong runs fwdRowsLong over two to seven vectors
// (fwdRowsMulti's pairs and triples, and a last lone vector) and wants
// every output's bits from fwdRowLong a vector at a time and from
// matRowsScalar (dotLanes): float32 and bfloat16 weights, column counts
// with tails and odd chunk counts, pieces of 16 and 48 rows from row 16,
// written and accumulated. It fails if a kernel's output went to another
// row or vector, or a vector's chunks were added out of order.
func TestRowMultiMatchesRowLong(t *testing.T) {
	if !fwdAsm || !useSIMD {
		t.Skip("the AVX-512 kernels need a CPU with AVX-512")
	}
	defer func(m bool) { fwdRowMulti = m }(fwdRowMulti)
	r := newRNG(17)
	for _, n := range []int{1, 15, 16, 17, 31, 33, 48, 63, 100, 1024, 1040, 1055, 3072} {
		for _, bf := range []bool{false, true} {
			const rows = 80
			w := mat{rows: rows, cols: n, data: make([]float32, rows*n)}
			fill(w.data, r, 1)
			if bf {
				w.bf = make([]uint16, len(w.data))
				for i, v := range w.data {
					w.bf[i] = uint16(math.Float32bits(v) >> 16)
				}
				w.data = nil
			}
			for m := 2; m <= 7; m++ {
				xs := make([][]float32, m)
				for i := range xs {
					xs[i] = make([]float32, n)
					fill(xs[i], r, 1)
				}
				for _, acc := range []bool{false, true} {
					for _, span := range [][2]int{{16, 32}, {16, 64}} {
						lo, hi := span[0], span[1]
						what := fmt.Sprintf("n=%d bf16=%v m=%d accumulate=%v rows %d-%d", n, bf, m, acc, lo, hi)
						base := newOutputs(m, rows)
						for i := range base {
							fill(base[i], r, 1)
						}
						outs := [3][][]float32{}
						for k := range outs {
							outs[k] = newOutputs(m, rows)
							for i := range base {
								copy(outs[k][i], base[i])
							}
						}
						fwdRowMulti = true
						fwdRowsLong(w, xs, outs[0], lo, hi, acc)
						fwdRowMulti = false
						fwdRowsLong(w, xs, outs[1], lo, hi, acc)
						matRowsScalar(w, xs, outs[2], lo, hi, acc)
						for b := range m {
							for j := range rows {
								g, one, want := outs[0][b][j], outs[1][b][j], outs[2][b][j]
								if math.Float32bits(g) != math.Float32bits(want) || math.Float32bits(one) != math.Float32bits(want) {
									t.Fatalf("%s: y[%d][%d] = %v together, %v a vector at a time, %v scalar", what, b, j, g, one, want)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestRowsPartialGroupMatchesScalar runs matRowsAsm over two and three
// vectors through the 4×6 tiles as a partial group (fwdRowsTile; float32
// weights through fwdRowsMulti) and
// wants every output's bits from matRowsScalar, and the rows outside
// [lo, hi) untouched: float32 and bfloat16 weights, pieces not a multiple
// of six rows, written and accumulated. It fails if a padding vector's
// output went to a real row, or a real vector's to the scratch.
func TestRowsPartialGroupMatchesScalar(t *testing.T) {
	if !fwdAsm || !useSIMD {
		t.Skip("the AVX-512 kernels need a CPU with AVX-512")
	}
	defer func(m bool) { fwdRowsTile = m }(fwdRowsTile)
	fwdRowsTile = true
	r := newRNG(23)
	for _, n := range []int{15, 16, 33, 1024, 1055, 3072} {
		for _, bf := range []bool{false, true} {
			const rows = 80
			w := mat{rows: rows, cols: n, data: make([]float32, rows*n)}
			fill(w.data, r, 1)
			if bf {
				w.bf = make([]uint16, len(w.data))
				for i, v := range w.data {
					w.bf[i] = uint16(math.Float32bits(v) >> 16)
				}
				w.data = nil
			}
			for m := 2; m <= 3; m++ {
				xs := make([][]float32, m)
				for i := range xs {
					xs[i] = make([]float32, n)
					fill(xs[i], r, 1)
				}
				for _, acc := range []bool{false, true} {
					for _, span := range [][2]int{{16, 32}, {0, 80}, {5, 12}, {16, 64}} {
						lo, hi := span[0], span[1]
						what := fmt.Sprintf("n=%d bf16=%v m=%d accumulate=%v rows %d-%d", n, bf, m, acc, lo, hi)
						got, want := newOutputs(m, rows), newOutputs(m, rows)
						for i := range got {
							fill(got[i], r, 1)
							copy(want[i], got[i])
						}
						if !matRowsAsm(w, xs, got, lo, hi, acc) {
							t.Fatalf("%s: matRowsAsm did nothing", what)
						}
						matRowsScalar(w, xs, want, lo, hi, acc)
						for b := range m {
							for j := range rows {
								if math.Float32bits(got[b][j]) != math.Float32bits(want[b][j]) {
									t.Fatalf("%s: y[%d][%d] = %v, scalar %v", what, b, j, got[b][j], want[b][j])
								}
							}
						}
					}
				}
			}
		}
	}
}
