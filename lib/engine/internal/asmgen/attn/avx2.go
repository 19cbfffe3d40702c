package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// The AVX2 tiles, for CPUs with AVX2 and FMA3 but not AVX-512 (AMD Zen 2
// and 3, Intel client CPUs): 16 YMM registers and VEX encodings only
// (VXORPS, not VPXORD; no embedded broadcasts, no Y16-Y31). Go's archsimd
// loops they replace (weightedPair, dots4x1) held four accumulators and
// copied each back every pass.

// tileYMax is the most rows an attnTileY tile takes: 12 accumulators.
const tileYMax = 6

// tileY emits attnTileY<r>: attnTileZ's sums over a 16-column strip (two
// 8-lane vectors), same arguments and order: each element adds its terms
// in ascending p, one fused multiply-add each. Accumulators Y0-Y11 (row
// i, vector j: Y(2i+j)), B's vectors Y12-Y13, the broadcast A[i][p]
// Y14-Y15 (alternating rows): eight loads per twelve multiply-adds, under
// Zen 3's and Haswell's two loads a cycle.
func tileY(ctx *build.Context, r int) {
	name := fmt.Sprintf("attnTileY%d", r)
	asmout.Kernel(ctx, name, "func(c *float32, ldc uintptr, a *float32, lda uintptr, ldp uintptr, b *float32, ldb uintptr, k int)")
	ctx.Doc(fmt.Sprintf("%s adds %d rows of Σ_p A[i][p]·B[p][:16] to C, p ascending (AVX2).", name, r))
	k := ctx.Load(ctx.Param("k"), ctx.GP64())
	ctx.TESTQ(k, k)
	ctx.JZ(operand.LabelRef("none"))
	moveCY(ctx, r, true)
	ap, b, ldb, ldp, off := tileArgs(ctx, r)
	ctx.Label("loop")
	ctx.VMOVUPS(operand.Mem{Base: b}, ymms[12])
	ctx.VMOVUPS(operand.Mem{Base: b, Disp: 32}, ymms[13])
	for i := range r {
		bc := ymms[14+i%2]
		ctx.VBROADCASTSS(operand.Mem{Base: ap[i], Index: off, Scale: 1}, bc)
		for j := range 2 {
			ctx.VFMADD231PS(ymms[12+j], bc, ymms[2*i+j])
		}
	}
	ctx.ADDQ(ldp, off)
	ctx.ADDQ(ldb, b)
	ctx.DECQ(k)
	ctx.JNZ(operand.LabelRef("loop"))
	moveCY(ctx, r, false)
	ctx.VZEROUPPER()
	ctx.Label("none")
	ctx.RET()
}

// moveCY loads (or stores) attnTileY's accumulators, r rows of two
// vectors (Y(2i+j)), from (to) C.
func moveCY(ctx *build.Context, r int, load bool) {
	c := ctx.Load(ctx.Param("c"), ctx.GP64())
	ldc := ctx.Load(ctx.Param("ldc"), ctx.GP64())
	for i := range r {
		if i > 0 {
			ctx.ADDQ(ldc, c)
		}
		for j := range 2 {
			m := operand.Mem{Base: c, Disp: 32 * j}
			if load {
				ctx.VMOVUPS(m, ymms[2*i+j])
			} else {
				ctx.VMOVUPS(ymms[2*i+j], m)
			}
		}
	}
}

// dotsYMax is the most queries an attnDotsY tile takes: 12 accumulators.
const dotsYMax = 3

// dotsY emits attnDotsY<r>: r queries' scores against four keys in place
// (rows ks bytes apart), for ng groups of r queries. Each score keeps
// attnDot's eight lanes in one accumulator (lane l adds elements i ≡ l
// mod 8, ascending, one fused multiply-add each, from +0), and a query's
// four trees come out of two rounds of VHADDPS and one add of the halves
// (attnDotsVec's and attnRowDots' instructions and order). Arguments: d
// (query i's four scores to d + i·ld bytes), q (query i at q + i·qs
// bytes), k (key m at k + m·ks bytes), hd (a multiple of 8), ng ≥ 1 (the
// next group's d and q follow r·ld and r·qs bytes on). Accumulators
// Y0-Y11 (query i, key m: Y(4i+m)), the queries' vectors Y12-Y14, a key's
// Y15: seven loads per twelve multiply-adds.
func dotsY(ctx *build.Context, r int) {
	name := fmt.Sprintf("attnDotsY%d", r)
	asmout.Kernel(ctx, name, "func(d *float32, ld uintptr, q *float32, qs uintptr, k *float32, ks uintptr, hd int, ng int)")
	ctx.Doc(fmt.Sprintf("%s stores %d queries' scores against 4 keys, for ng groups of them (AVX2).", name, r))
	acc := func(i, m int) reg.VecPhysical { return ymms[4*i+m] }
	d := ctx.Load(ctx.Param("d"), ctx.GP64())
	ld := ctx.Load(ctx.Param("ld"), ctx.GP64())
	q := ctx.Load(ctx.Param("q"), ctx.GP64())
	qs := ctx.Load(ctx.Param("qs"), ctx.GP64())
	k := ctx.Load(ctx.Param("k"), ctx.GP64())
	ks := ctx.Load(ctx.Param("ks"), ctx.GP64())
	kp := asmout.Pointers(ctx, k, ks, 4) // the same keys for every group
	n := ctx.Load(ctx.Param("hd"), ctx.GP64())
	ng := ctx.Load(ctx.Param("ng"), ctx.GP64())
	ctx.SHLQ(operand.U8(2), n) // bytes of a row
	ctx.Label("group")
	for i := range r {
		for m := range 4 {
			ctx.VXORPS(acc(i, m), acc(i, m), acc(i, m))
		}
	}
	// Plain loads take indexed addresses (no fused operation to split,
	// as with a multiply-add's memory operand), so one offset walks the
	// queries and keys.
	qp := asmout.Pointers(ctx, q, qs, r)
	off := ctx.GP64()
	ctx.XORQ(off, off)
	ctx.Label("loop")
	for i := range r {
		ctx.VMOVUPS(operand.Mem{Base: qp[i], Index: off, Scale: 1}, ymms[12+i])
	}
	for m := range 4 {
		ctx.VMOVUPS(operand.Mem{Base: kp[m], Index: off, Scale: 1}, ymms[15])
		for i := range r {
			ctx.VFMADD231PS(ymms[12+i], ymms[15], acc(i, m))
		}
	}
	ctx.ADDQ(operand.U8(32), off)
	ctx.CMPQ(off, n)
	ctx.JB(operand.LabelRef("loop"))
	dp := ctx.GP64()
	ctx.MOVQ(d, dp)
	for i := range r {
		if i > 0 {
			ctx.ADDQ(ld, dp)
		}
		a0, a1, a2, a3 := acc(i, 0), acc(i, 1), acc(i, 2), acc(i, 3)
		ctx.VHADDPS(a1, a0, a0)
		ctx.VHADDPS(a3, a2, a2)
		ctx.VHADDPS(a2, a0, a0)
		x0, x1 := xmms[4*i], xmms[4*i+1]
		ctx.VEXTRACTF128(operand.U8(1), a0, x1)
		ctx.VADDPS(x1, x0, x0)
		ctx.VMOVUPS(x0, operand.Mem{Base: dp})
	}
	for range r {
		ctx.ADDQ(ld, d)
		ctx.ADDQ(qs, q)
	}
	ctx.DECQ(ng)
	ctx.JNZ(operand.LabelRef("group"))
	ctx.VZEROUPPER()
	ctx.RET()
}
