//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"math"
	"testing"
)

// TestRowsMultiOneSameBits runs fwdRowsMulti over two and three vectors
// with a piece's rows in one kernel call (rowsMultiOne) and a call per
// one or two rows of each stream, and wants every output's bits the same
// both ways and the same as matRowsScalar's (dotLanes), the rows outside
// the piece untouched, and every sum within a float64 dot product's
// rounding bound: float32 and bfloat16 weights, column counts with tails
// and odd chunk counts, pieces of 4, 12 and 20 rows a stream, written
// and accumulated. It fails if the kernel stored a sum to another row,
// stream or vector, stored past the piece, or added where it should
// store (or the reverse).
func TestRowsMultiOneSameBits(t *testing.T) {
	if !fwdAsm || !useSIMD {
		t.Skip("the AVX-512 kernels need a CPU with AVX-512")
	}
	defer func(o bool) { rowsMultiOne = o }(rowsMultiOne)
	r := newRNG(29)
	const rows = 96
	for _, n := range []int{1, 15, 16, 17, 33, 48, 100, 1024, 1055} {
		for _, bf := range []bool{false, true} {
			w := randRowsMat(r, rows, n, bf)
			for m := 2; m <= 3; m++ {
				xs := make([][]float32, m)
				for i := range xs {
					xs[i] = make([]float32, n)
					fill(xs[i], r, 1)
				}
				for _, acc := range []bool{false, true} {
					for _, span := range [][2]int{{16, 32}, {16, 64}, {0, 80}} {
						lo, hi := span[0], span[1]
						q := (hi - lo) / 4
						what := fmt.Sprintf("n=%d bf16=%v m=%d accumulate=%v rows %d-%d", n, bf, m, acc, lo, hi)
						base, outs := sameStartOutputs(r, m, rows)
						rowsMultiOne = true
						fwdRowsMulti(w, xs, outs[0], lo, q, acc)
						rowsMultiOne = false
						fwdRowsMulti(w, xs, outs[1], lo, q, acc)
						matRowsScalar(w, xs, outs[2], lo, hi, acc)
						for b := range m {
							for j := range rows {
								one, loop, want := outs[0][b][j], outs[1][b][j], outs[2][b][j]
								if math.Float32bits(one) != math.Float32bits(loop) || math.Float32bits(one) != math.Float32bits(want) {
									t.Fatalf("%s: y[%d][%d] = %v in one call, %v a call per row, %v scalar", what, b, j, one, loop, want)
								}
								if j < lo || j >= hi {
									if math.Float32bits(one) != math.Float32bits(base[b][j]) {
										t.Fatalf("%s: y[%d][%d] outside the piece changed: %v, was %v", what, b, j, one, base[b][j])
									}
									continue
								}
								// The float64 sum, and the float32 rounding
								// bound of an n-term dot product.
								var ref, mag float64
								for k := range n {
									wk := weightAt(w, j, k)
									ref += float64(xs[b][k]) * wk
									mag += math.Abs(float64(xs[b][k]) * wk)
								}
								if acc {
									ref += float64(base[b][j])
									mag += math.Abs(float64(base[b][j]))
								}
								if d := math.Abs(float64(one) - ref); d > float64(n+2)*0x1p-24*mag+1e-30 {
									t.Fatalf("%s: y[%d][%d] = %v, float64 %v (off %g, bound %g)", what, b, j, one, ref, d, float64(n+2)*0x1p-24*mag)
								}
							}
						}
					}
				}
			}
		}
	}
}

// weightAt is w's weight at row j, column k, as float64.
func weightAt(w mat, j, k int) float64 {
	if w.bf != nil {
		return float64(math.Float32frombits(uint32(w.bf[j*w.cols+k]) << 16))
	}
	return float64(w.data[j*w.cols+k])
}

// TestDecodeRowsMultiOneSameBits decodes steps of one to three sequences
// (two and three through fwdRowsMulti) with rowsMultiOne off and on, and
// wants the logits' and caches' bits the same, float32 and bfloat16
// weights, unfused and on the fused fork.
func TestDecodeRowsMultiOneSameBits(t *testing.T) {
	decodeSwitchSameBits(t, "rows-multi-one", &rowsMultiOne)
}

// ROWS_SWITCH=multione: rowsMultiOne (BenchmarkDecodeRows).
func init() { rowsSwitches["multione"] = func(on bool) { rowsMultiOne = on } }
