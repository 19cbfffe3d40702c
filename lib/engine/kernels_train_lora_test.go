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
		wb := mat{rows: rows, cols: cols, bf: make([]uint16, len(w.data))}
		for i, v := range w.data {
			wb.bf[i] = uint16(math.Float32bits(v) >> 16)
		}
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
