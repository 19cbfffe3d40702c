package engine

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"
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
			w := randRowsMat(r, rows, n, bf)
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
						_, outs := sameStartOutputs(r, m, rows)
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
// weights through fwdRowsMulti), and batches of 5-11 whose last partial
// group takes them too (fwdRowsTilePad), and
// wants every output's bits from matRowsScalar, and the rows outside
// [lo, hi) untouched: float32 and bfloat16 weights, pieces not a multiple
// of six rows, written and accumulated. It fails if a padding vector's
// output went to a real row, or a real vector's to the scratch.
func TestRowsPartialGroupMatchesScalar(t *testing.T) {
	if !fwdAsm || !useSIMD {
		t.Skip("the AVX-512 kernels need a CPU with AVX-512")
	}
	defer func(m, p bool) { fwdRowsTile, fwdRowsTilePad = m, p }(fwdRowsTile, fwdRowsTilePad)
	fwdRowsTile, fwdRowsTilePad = true, true
	r := newRNG(23)
	for _, n := range []int{15, 16, 33, 1024, 1055, 3072} {
		for _, bf := range []bool{false, true} {
			const rows = 80
			w := randRowsMat(r, rows, n, bf)
			for _, m := range []int{2, 3, 5, 6, 7, 11} {
				xs := make([][]float32, m)
				for i := range xs {
					xs[i] = make([]float32, n)
					fill(xs[i], r, 1)
				}
				for _, acc := range []bool{false, true} {
					for _, span := range [][2]int{{16, 32}, {0, 80}, {5, 12}, {16, 64}} {
						lo, hi := span[0], span[1]
						what := fmt.Sprintf("n=%d bf16=%v m=%d accumulate=%v rows %d-%d", n, bf, m, acc, lo, hi)
						matRowsAsmMatchesScalar(t, what, r, w, xs, rows, lo, hi, acc)
					}
				}
			}
		}
	}
}

// BenchmarkRowsKernels reads a bfloat16 matrix of 1024 columns on one
// core with each decode kernel: fwdRowLong (one vector), fwdRowMulti2/3
// (fwdRowsMulti), and the 4×6 tiles with a partial or full group (two,
// three, four vectors), in pieces of 16 rows and longer (the fused fork
// cuts pieces of whole 16-row blocks),
// the matrix hot (512 KiB, in L2) or from memory (64 MiB). The variants
// alternate round by round; it prints each one's weight bytes a second
// over fwdRowLong's in the same rounds (median over the rounds), so a
// kernel near 1.0 from memory but below it hot is compute-bound hot.
func BenchmarkRowsKernels(b *testing.B) {
	if !fwdAsm || !useSIMD {
		b.Skip("the AVX-512 kernels need a CPU with AVX-512")
	}
	defer func(m, t bool) { fwdRowMulti, fwdRowsTile = m, t }(fwdRowMulti, fwdRowsTile)
	const n = 1024
	r := newRNG(5)
	threads := envInt("ROWS_KERNELS_THREADS", 1) // each its own copy of the matrix
	type variant struct {
		name  string
		m     int
		multi bool
		tile  bool
	}
	vs := []variant{{"long1", 1, true, false}, {"multi2", 2, true, false}, {"multi3", 3, true, false},
		{"long2", 2, false, false}, {"tile2", 2, true, true}, {"tile3", 3, true, true}, {"tile4", 4, true, true}}
	for b.Loop() {
		for _, c := range [][2]int{{256, 16}, {256, 128}, {32768, 16}, {32768, 512}} {
			rows, piece := c[0], c[1]
			w := mat{rows: rows, cols: n, bf: make([]uint16, rows*n)}
			for i := range w.bf {
				w.bf[i] = uint16(math.Float32bits(r.uniform32()-0.5) >> 16)
			}
			ws := []mat{w}
			for range threads - 1 {
				c := mat{rows: rows, cols: n, bf: append([]uint16(nil), w.bf...)}
				ws = append(ws, c)
			}
			xs := make([][]float32, 4)
			for i := range xs {
				xs[i] = make([]float32, n)
				fill(xs[i], r, 1)
			}
			ys := newOutputs(4*threads, rows)
			reps := max(1, (64<<20)/(2*rows*n))
			ratios := make([][]float64, len(vs))
			for round := range 12 {
				var t [8]float64
				for k := range vs {
					v := vs[(k+round)%len(vs)]
					fwdRowMulti, fwdRowsTile = v.multi, v.tile
					t0 := time.Now()
					var wg sync.WaitGroup
					for th := range threads {
						wg.Go(func() {
							yt := ys[4*th : 4*th+4]
							for range reps {
								for lo := 0; lo < rows; lo += piece {
									matRowsAsm(ws[th], xs[:v.m], yt[:v.m], lo, lo+piece, false)
								}
							}
						})
					}
					wg.Wait()
					t[(k+round)%len(vs)] = time.Since(t0).Seconds()
				}
				for k := range vs {
					ratios[k] = append(ratios[k], t[0]/t[k])
				}
			}
			fmt.Printf("rows kernels, %d threads, %d rows (%d KiB), pieces of %d, weight rate over long1's (median of 12 rounds):", threads, rows, rows*n*2>>10, piece)
			for k, v := range vs {
				fmt.Printf(" %s %.3f", v.name, median(ratios[k]))
			}
			fmt.Println()
		}
	}
}

// randRowsMat is a rows×n matrix of random weights, in bfloat16 (the
// float32 values truncated) when bf.
func randRowsMat(r *rng, rows, n int, bf bool) mat {
	w := mat{rows: rows, cols: n, data: make([]float32, rows*n)}
	fill(w.data, r, 1)
	if bf {
		w.bf = truncBF16(w.data)
		w.data = nil
	}
	return w
}

// matRowsAsmMatchesScalar runs matRowsAsm and matRowsScalar over rows
// [lo, hi) of w from the same random outputs (rows rows a vector), and
// fails unless every output of every vector has the same bits: a sum
// written to a wrong row, or past the piece, shows.
func matRowsAsmMatchesScalar(t *testing.T, what string, r *rng, w mat, xs [][]float32, rows, lo, hi int, acc bool) {
	t.Helper()
	m := len(xs)
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
