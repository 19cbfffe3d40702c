// Command fwdavx2 generates lib/engine/gemm_fwd_avx2_amd64.s and its Go
// declarations: the AVX2 kernels of the engine's forward matrix product,
// for CPUs without AVX-512 (the AVX-512 ones come from ../fwd). They sum
// in the same "dot-form" order (lib/engine/kernels.go, dotLanes): each
// output element has 16 lane partial sums, lane l adding the products at
// k ≡ l (mod 16) in ascending k with one fused multiply-add each (FMA3),
// and the lanes are added in the tree i+8, i+4, i+2, i+1. A 16-lane
// sum is two 8-lane YMM accumulators (lanes 0-7 and 8-15), so adding them
// is the tree's first level; shuffles do the other three for eight
// outputs at once.
//
// AVX2 has 16 YMM registers: a batch tile is 2 tokens × 3 rows (12
// accumulators, two x halves, a weight vector, and for bfloat16 the
// widening control), decoding reads up to 8 rows one after another.
//
// Usage (from lib/engine, see the go:generate line in
// kernels_fwd_avx2_amd64.go):
//
//	go run ./internal/asmgen/fwdavx2 -out gemm_fwd_avx2_amd64.s -stubs gemm_fwd_avx2_stub_amd64.go
package main

import (
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/printer"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

func main() { asmout.Main("fwdavx2", "gemm_fwd_avx2_amd64.s", "gemm_fwd_avx2_stub_amd64.go", Generate) }

// Generate returns the assembly and the Go declarations. The header names
// a fixed command so the output does not depend on how it was run.
func Generate() (asm, decl []byte, err error) {
	ctx := build.NewContext()
	widenBF16Table(ctx)
	for _, bf := range []bool{false, true} {
		tile2x3(ctx, bf, false)
		row8(ctx, bf)
	}
	tile2x3(ctx, true, true)
	for _, bf := range []bool{false, true} {
		tile4x3(ctx, bf)
	}
	return asmout.Print(ctx, printer.Config{Argv: []string{"go", "run", "./internal/asmgen/fwdavx2"}, Pkg: "engine"})
}
