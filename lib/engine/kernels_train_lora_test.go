package engine

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// matMulTLoRA, which takes a LoRA A's rows as further terms of the base
// matrix's column blocks, gives the bits of matMulT through W and then,
// accumulating, through A with the scalar kernels: float32 and bfloat16
// bases, writing and accumulating, shapes with column and row tails, one
// block of up to kcWhole rows and several kcAsm blocks past it, 1 and 3
// goroutines, and rows not evenly spaced (which take the two calls).
func TestMatMulTLoRAMatchesTwoCalls(t *testing.T) {
	r := newRNG(17)
	all := [][4]int{{300, 600, 5, 32}, {1100, 300, 13, 32}, {64, 257, 130, 8}, {2100, 300, 61, 32}, {3300, 300, 13, 32}, {40, 48, 12, 3}}
	// Under qemu (no AVX-512) the fold is the two calls themselves, so the
	// shapes that reach several of the assembly's row blocks add nothing
	// there but minutes of emulated scalar reference.
	few := [][4]int{{300, 600, 5, 32}, {64, 257, 130, 8}, {40, 48, 12, 3}}
	for _, sz := range qemuFew(all, few) {
		rows, cols, n, rank := sz[0], sz[1], sz[2], sz[3]
		w, _, _ := benchMat(rows, cols)
		wb := mat{rows: rows, cols: cols, bf: truncBF16(w.data)}
		a, _, _ := benchMat(rank, cols)
		for _, spaced := range []bool{true, false} {
			ys, ts, x0 := gapRows(r, n, rows, spaced), gapRows(r, n, rank, spaced), gapRows(r, n, cols, spaced)
			for _, base := range []mat{w, wb} {
				for _, acc := range []bool{false, true} {
					name := fmt.Sprintf("%v spaced=%v bf16=%v acc=%v", sz, spaced, base.bf != nil, acc)
					want := cloneGapRows(x0)
					withKernels(false, 1, func() {
						matMulT(base, ys, want, acc)
						matMulT(a, ts, want, true)
					})
					for _, procs := range []int{1, 3} {
						got := cloneGapRows(x0)
						withKernels(true, procs, func() { matMulTLoRA(base, ys, a, ts, got, acc) })
						for b := range want {
							if !slices.Equal(math32Bits(got[b]), math32Bits(want[b])) {
								t.Fatalf("%s procs=%d row %d: matMulTLoRA differs from matMulT twice", name, procs, b)
							}
						}
					}
				}
			}
		}
	}
}

// outerAccShared, which packs each strip of the shared inputs once for
// the tiles of every gradient (the LoRA A's of q, k and v), gives the
// bits of one outerAcc per gradient with the scalar kernels and with the
// assembly (the old kernel), on 1 and 3 goroutines, and sums within
// float64's tolerance: ranks that fill whole tiles and ones with tails,
// column tails, batches under and over a tile and above the strip
// packing's stride, rows not evenly spaced (which take one outerAcc per
// gradient), and rows past outerSplitColsRows.
func TestOuterAccSharedMatchesScalar(t *testing.T) {
	r := newRNG(23)
	all := [][4]int{{32, 1024, 13, 3}, {32, 300, 130, 2}, {8, 257, 5, 3}, {13, 600, 40, 2}, {3, 48, 1, 3}, {32, 17, 7, 1}, {80, 300, 9, 2}}
	few := [][4]int{{32, 300, 13, 3}, {13, 257, 7, 2}, {80, 48, 5, 2}}
	for _, sz := range qemuFew(all, few) {
		rows, cols, n, k := sz[0], sz[1], sz[2], sz[3]
		for _, spaced := range []bool{true, false} {
			name := fmt.Sprintf("%v spaced=%v", sz, spaced)
			vs := gapRows(r, n, cols, spaced)
			uss, d0 := make([][][]float32, k), make([][]float32, k)
			for i := range k {
				uss[i], d0[i] = gapRows(r, n, rows, spaced), gapRows(r, 1, rows*cols, true)[0]
			}
			one := func(asm bool) [][]float32 {
				out := make([][]float32, k)
				withKernels(asm, 1, func() {
					for i := range k {
						out[i] = slices.Clone(d0[i])
						outerAcc(out[i], rows, cols, uss[i], vs)
					}
				})
				return out
			}
			want, old := one(false), one(true)
			for i := range k {
				if !slices.Equal(math32Bits(old[i]), math32Bits(want[i])) {
					t.Fatalf("%s: outerAcc's assembly differs from its scalar kernels", name)
				}
				for o := range rows {
					for c := range cols {
						s := float64(d0[i][o*cols+c])
						for b := range n {
							s += float64(uss[i][b][o]) * float64(vs[b][c])
						}
						if g := float64(want[i][o*cols+c]); math.Abs(g-s) > 1e-5*(1+math.Sqrt(float64(n))) {
							t.Fatalf("%s gradient %d [%d][%d] = %v, want %v", name, i, o, c, g, s)
						}
					}
				}
			}
			for _, asm := range []bool{false, true} {
				for _, procs := range []int{1, 3} {
					got := slices.Clone(d0)
					for i := range got {
						got[i] = slices.Clone(d0[i])
					}
					withKernels(asm, procs, func() { outerAccShared(got, rows, cols, uss, vs) })
					for i := range k {
						if !slices.Equal(math32Bits(got[i]), math32Bits(want[i])) {
							t.Fatalf("%s asm=%v procs=%d gradient %d: outerAccShared differs from outerAcc", name, asm, procs, i)
						}
					}
				}
			}
		}
	}
}
