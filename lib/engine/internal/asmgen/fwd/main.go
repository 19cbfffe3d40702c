// Command fwd generates lib/engine/gemm_fwd_amd64.s and its Go
// declarations: the AVX-512 kernels of the engine's forward matrix
// product in the "dot-form" order (see lib/engine/kernels.go, dotLanes).
//
// Every output element y[t][o] = Σ_k x[t][k]·W[o][k] is summed in 16 lane
// partial sums: lane l adds the products at k ≡ l (mod 16) in ascending k,
// each product fused into its add (VFMADD231PS), and the lanes are then
// added in a fixed tree (i+8, i+4, i+2, i+1). A kernel computes 16 or 24
// outputs at once (4 tokens × 4 or 6 rows, or 1 token × 16 rows); its tree
// reduces 16 accumulators together with shuffles, lane for lane the same
// additions as the scalar reference. For rows of 16-64 columns (a LoRA
// B) fwdCols turns that around: its vector lanes run across 16 rows, one
// accumulator per dot-form lane, and the tree is vertical adds.
//
// Usage (from lib/engine, see the go:generate line in kernels_fwd_amd64.go):
//
//	go run ./internal/asmgen/fwd -out gemm_fwd_amd64.s -stubs gemm_fwd_stub_amd64.go
package main

import (
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/printer"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

func main() { asmout.Main("fwd", "gemm_fwd_amd64.s", "gemm_fwd_stub_amd64.go", Generate) }

// Generate returns the assembly and the Go declarations. The header names
// a fixed command so the output does not depend on how it was run.
func Generate() (asm, decl []byte, err error) {
	ctx := build.NewContext()
	row16Tables(ctx)
	for _, bf := range []bool{false, true} {
		tile4x4(ctx, bf)
		tile4x6(ctx, bf, false)
		tile4x6(ctx, bf, true)
		row16(ctx, bf)
	}
	row16Unpaced(ctx)
	for _, v := range rowLongVariants {
		for _, bf := range []bool{false, true} {
			rowLong(ctx, bf, v)
		}
	}
	for _, v := range rowsLongVariants {
		for _, bf := range []bool{false, true} {
			rowsLong(ctx, bf, v)
		}
	}
	for _, v := range rowMultiVecs {
		for _, bf := range []bool{false, true} {
			rowMulti(ctx, bf, v)
		}
	}
	for _, v := range rowMultiVecs {
		for _, bf := range []bool{false, true} {
			rowsMulti(ctx, bf, v)
		}
	}
	for _, k := range colsK {
		cols(ctx, k)
	}
	packGroup(ctx)
	return asmout.Print(ctx, printer.Config{Argv: []string{"go", "run", "./internal/asmgen/fwd"}, Pkg: "engine"})
}
