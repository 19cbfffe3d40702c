package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// colsK are the row lengths K (LoRA ranks) that fwdCols kernels exist for.
var colsK = []int{16, 32, 48, 64}

// cols generates fwdCols<K>F32(p, xs, ys, tokens, col, mask, add): the
// forward product for rows of only K columns (a LoRA B, K its rank), 16
// rows at a time with the vector lanes across the rows instead of
// across k. p is the block's panel, p[16k+i] = w[i][k] (K·16 floats);
// for each of tokens vectors x = xs[t], s_i = Σ_k x[k]·w[i][k] goes to
// ys[t][col+i] (added to it with add) for the rows i in mask. Each row's
// sum is still its dotLanes order: lane l of the dot form (the products
// at k ≡ l mod 16, ascending, each fused into its add from zero) is one
// accumulator here, filled by broadcasting x[k] (VFMADD231PS.BCST), and
// the lane tree is vertical adds of those accumulators (l + l+8, then
// +4, +2, +1), the same additions in the same order. The tiles of
// whole-row lanes spent more on their shuffle trees and stores than on
// the products at such K (two chunks a row at K = 32). Tokens go in
// pairs, each panel vector loaded once for both; a last odd one alone.
func cols(ctx *build.Context, k int) {
	asmout.Kernel(ctx, fmt.Sprintf("fwdCols%dF32", k), "func(p *float32, xs, ys *[]float32, tokens, col, mask, add int)")
	p, xs, ys, left, col := ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("p"), p)
	ctx.Load(ctx.Param("xs"), xs)
	ctx.Load(ctx.Param("ys"), ys)
	ctx.Load(ctx.Param("tokens"), left)
	ctx.Load(ctx.Param("col"), col)
	ctx.Load(ctx.Param("mask"), reg.RAX)
	ctx.KMOVW(reg.EAX, reg.K1)
	x := [2]reg.GPVirtual{ctx.GP64(), ctx.GP64()}
	ctx.CMPQ(left, U8(2))
	ctx.JB(LabelRef("single"))
	ctx.Label("pair")
	// The output lines of the tokens two pairs on, into L1: with long
	// rows (a LoRA B of thousands of rows) they come from memory, and
	// the add waited for them.
	ctx.CMPQ(left, U8(6))
	ctx.JB(LabelRef("nopf"))
	for t := 4; t < 6; t++ {
		ctx.MOVQ(Mem{Base: ys, Disp: sliceHeader * t}, x[0])
		ctx.PREFETCHT0(Mem{Base: x[0], Index: col, Scale: 4})
		ctx.PREFETCHT0(Mem{Base: x[0], Index: col, Scale: 4, Disp: 60})
	}
	ctx.Label("nopf")
	colsTokens(ctx, k, p, xs, ys, col, x[:], "pair")
	ctx.ADDQ(U8(2*sliceHeader), xs)
	ctx.ADDQ(U8(2*sliceHeader), ys)
	ctx.SUBQ(U8(2), left)
	ctx.CMPQ(left, U8(2))
	ctx.JAE(LabelRef("pair"))
	ctx.Label("single")
	ctx.TESTQ(left, left)
	ctx.JZ(LabelRef("end"))
	colsTokens(ctx, k, p, xs, ys, col, x[:1], "single")
	ctx.Label("end")
	ctx.VZEROUPPER()
	ctx.RET()
}

// colsTokens emits fwdCols's sums for len(x) tokens (one or two): the
// lanes l and l+8 of each (Z16.. and Z20..) for l < 8 summed into
// Z(8t+l) at once (tree level 1), then levels 2-4 over those, then the
// store (or add) of Z(8t) under K1. Z28/Z29 hold the panel vectors.
func colsTokens(ctx *build.Context, k int, p, xs, ys, col reg.GPVirtual, x []reg.GPVirtual, label string) {
	for t := range x {
		ctx.MOVQ(Mem{Base: xs, Disp: sliceHeader * t}, x[t])
	}
	a := func(t, h int) reg.VecPhysical { return zmm(16 + 4*t + h) } // h 0: lane l, 1: lane l+8
	for l := range 8 {
		for t := range x {
			ctx.VPXORD(a(t, 0), a(t, 0), a(t, 0))
			ctx.VPXORD(a(t, 1), a(t, 1), a(t, 1))
		}
		for c := 0; c < k; c += 16 {
			for h, lane := range []int{l, l + 8} {
				pv := zmm(28 + h)
				ctx.VMOVUPS(Mem{Base: p, Disp: 64 * (c + lane)}, pv)
				for t := range x {
					ctx.VFMADD231PS_BCST(Mem{Base: x[t], Disp: 4 * (c + lane)}, pv, a(t, h))
				}
			}
		}
		for t := range x {
			ctx.VADDPS(a(t, 1), a(t, 0), zmm(8*t+l))
		}
	}
	for _, h := range []int{4, 2, 1} {
		for t := range x {
			for l := range h {
				ctx.VADDPS(zmm(8*t+l+h), zmm(8*t+l), zmm(8*t+l))
			}
		}
	}
	y := x[0] // free once the products are done
	for t := range x {
		ctx.MOVQ(Mem{Base: ys, Disp: sliceHeader * t}, y)
		m := Mem{Base: y, Index: col, Scale: 4}
		s := zmm(8 * t)
		ctx.CMPQ(paramMem(ctx, "add"), U8(0))
		ctx.JE(LabelRef(fmt.Sprintf("%sput%d", label, t)))
		ctx.VMOVUPS_Z(m, reg.K1, reg.Z30)
		ctx.VADDPS(s, reg.Z30, s)
		ctx.Label(fmt.Sprintf("%sput%d", label, t))
		ctx.VMOVUPS(s, reg.K1, m)
	}
}
