package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
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

// expSum8 emits attnExpSum8, attnExpSum16 for AVX2: the same arguments
// and constants (c, expsum.go's order) and each lane the same operations
// (exp32's, in order; the sums lane t mod 8, ascending), plus cb, room
// for the constants broadcast to eight lanes (nCons·8 floats): sixteen
// registers do not hold them beside two chains, so all but the row's
// scale and maximum are memory operands there. Sixteen scores a pass in
// two chains; the last 1..15 eight at a time through VMASKMOVPS, their
// unused lanes zeroed before they join the sums. Sums Y0 (lanes 0-3)
// and Y1 (lanes 4-7), scale Y2, maximum Y3, chain v in Y(4+5v)..Y(8+5v),
// Y14-Y15 temporaries and masks.
func expSum8(ctx *build.Context) {
	asmout.Kernel(ctx, "attnExpSum8", "func(sc *float32, n int, p *float64, c *float32, sums *float64, cb *float32)")
	ctx.Doc("attnExpSum8 is attnExpSum16 on eight lanes (AVX2); cb is room for its broadcast constants.")
	sc := ctx.Load(ctx.Param("sc"), ctx.GP64())
	n := ctx.Load(ctx.Param("n"), ctx.GP64())
	p := ctx.Load(ctx.Param("p"), ctx.GP64())
	c := ctx.Load(ctx.Param("c"), ctx.GP64())
	cb := ctx.Load(ctx.Param("cb"), ctx.GP64())
	for i := range nCons {
		y := ymms[15]
		switch i {
		case cScale, cMax:
			y = ymms[2+i]
		}
		if i == cBias {
			ctx.VPBROADCASTD(operand.Mem{Base: c, Disp: 4 * i}, y)
		} else {
			ctx.VBROADCASTSS(operand.Mem{Base: c, Disp: 4 * i}, y)
		}
		if i != cScale && i != cMax {
			ctx.VMOVUPS(y, operand.Mem{Base: cb, Disp: 32 * i})
		}
	}
	k := func(i int) operand.Mem { return operand.Mem{Base: cb, Disp: 32 * i} }
	ctx.VXORPD(ymms[0], ymms[0], ymms[0])
	ctx.VXORPD(ymms[1], ymms[1], ymms[1])
	ctx.CMPQ(n, operand.U8(16))
	ctx.JB(operand.LabelRef("tail8"))
	ctx.Label("loop8")
	var e [2]reg.VecPhysical
	for v := range 2 {
		x := ymms[4+5*v]
		ctx.VMULPS(operand.Mem{Base: sc, Disp: 32 * v}, ymms[2], x)
		ctx.VSUBPS(ymms[3], x, x)
		e[v] = exp32y(ctx, k, v)
	}
	for v := range 2 {
		ctx.VMOVUPS(e[v], operand.Mem{Base: sc, Disp: 32 * v})
		widenAddY(ctx, e[v], p, 64*v, nil)
	}
	ctx.ADDQ(operand.U8(64), sc)
	skipNil(ctx, p, func() { ctx.ADDQ(operand.U8(128), p) })
	ctx.SUBQ(operand.U8(16), n)
	ctx.CMPQ(n, operand.U8(16))
	ctx.JAE(operand.LabelRef("loop8"))
	ctx.Label("tail8")
	// The last 1..15, eight lanes at a time: lane l is on while l < n
	// (laneIndex8 against n broadcast).
	m, idx := ctx.GP64(), ctx.GP64()
	ctx.LEAQ(laneIndex8, idx)
	ctx.Label("part8")
	ctx.TESTQ(n, n)
	ctx.JZ(operand.LabelRef("done8"))
	ctx.MOVQ(operand.U32(8), m) // lanes this pass: min(n, 8)
	ctx.CMPQ(n, m)
	ctx.CMOVQLT(n, m)
	ctx.SUBQ(m, n)
	mask := ymms[14]
	ctx.VMOVQ(m, mask.AsX())
	ctx.VPBROADCASTD(mask.AsX(), mask)
	ctx.VPCMPGTD(operand.Mem{Base: idx}, mask, mask) // n > l
	x := ymms[4]
	ctx.VMASKMOVPS(operand.Mem{Base: sc}, mask, x)
	ctx.VMULPS(ymms[2], x, x)
	ctx.VSUBPS(ymms[3], x, x)
	q := exp32y(ctx, k, 0)
	ctx.VANDPS(mask, q, q)
	ctx.VMASKMOVPS(q, mask, operand.Mem{Base: sc})
	widenAddY(ctx, q, p, 0, mask)
	ctx.ADDQ(operand.U8(32), sc)
	skipNil(ctx, p, func() { ctx.ADDQ(operand.U8(64), p) })
	ctx.JMP(operand.LabelRef("part8"))
	ctx.Label("done8")
	sums := ctx.Load(ctx.Param("sums"), ctx.GP64())
	ctx.VMOVUPD(ymms[0], operand.Mem{Base: sums})
	ctx.VMOVUPD(ymms[1], operand.Mem{Base: sums, Disp: 32})
	ctx.VZEROUPPER()
	ctx.RET()
}

// laneIndex8 is the int32 lane numbers 0..7 (expSum8's tail masks).
var laneIndex8 operand.Mem

// laneIndexTable emits laneIndex8's data.
func laneIndexTable(ctx *build.Context) {
	laneIndex8 = ctx.StaticGlobal("attnLaneIndex8")
	ctx.DataAttributes(attr.RODATA | attr.NOPTR)
	for i := range 8 {
		ctx.AddDatum(4*i, operand.U32(i))
	}
}

// exp32y is exp32 on the eight lanes of chain v's x, Y(4+5v) (left
// intact), every operation lib/engine's exp32's, constants from k(i); it
// returns the result's register.
func exp32y(ctx *build.Context, k func(int) operand.Mem, v int) reg.VecPhysical {
	x, t, kk, r, q := ymms[4+5*v], ymms[5+5*v], ymms[6+5*v], ymms[7+5*v], ymms[8+5*v]
	ctx.VMOVUPS(k(cLog2e), t)
	ctx.VFMADD213PS(k(cRound), x, t) // t = log2e·x + round
	ctx.VSUBPS(k(cRound), t, kk)     // k = t − round
	ctx.VMOVAPS(x, r)
	ctx.VFMADD231PS(k(cLn2Hi), kk, r) // r = k·(−ln2 hi) + x
	ctx.VFMADD231PS(k(cLn2Lo), kk, r) // r = k·(−ln2 lo) + r
	ctx.VMOVUPS(k(cPoly), q)
	for i := 1; i < 8; i++ {
		ctx.VFMADD213PS(k(cPoly+i), r, q) // q = q·r + c_i
	}
	ctx.VPADDD(k(cBias), t, kk) // 2^k's bits: (k + 127) << 23
	ctx.VPSLLD(operand.U8(23), kk, kk)
	ctx.VMULPS(kk, q, q)
	m := ymms[15]
	ctx.VCMPPS(operand.U8(0x1E), k(cHi), x, m) // x > hi (ordered)
	ctx.VBLENDVPS(m, k(cInf), q, q)
	ctx.VCMPPS(operand.U8(0x15), k(cLo), x, m) // not x < lo (NaN too)
	ctx.VANDPS(m, q, q)
	return q
}

// widenAddY adds e's lanes, widened to float64, to the sums in Y0 (lanes
// 0-3) and Y1 (4-7), and stores them to p + off bytes unless p is nil
// (under mask's lanes, sign-extended, when mask is not nil).
func widenAddY(ctx *build.Context, e reg.VecPhysical, p reg.Register, off int, mask reg.Register) {
	lo, hi := ymms[5], ymms[6] // chain 0's t and k, dead after exp32y
	ctx.VEXTRACTF128(operand.U8(1), e, hi.AsX())
	ctx.VCVTPS2PD(e.AsX(), lo)
	ctx.VCVTPS2PD(hi.AsX(), hi)
	ctx.VADDPD(lo, ymms[0], ymms[0])
	ctx.VADDPD(hi, ymms[1], ymms[1])
	skipNil(ctx, p, func() {
		if mask == nil {
			ctx.VMOVUPD(lo, operand.Mem{Base: p, Disp: off})
			ctx.VMOVUPD(hi, operand.Mem{Base: p, Disp: off + 32})
			return
		}
		mlo, mhi := ymms[15], ymms[9]
		ctx.VPMOVSXDQ(mask.(reg.VecPhysical).AsX(), mlo)
		ctx.VEXTRACTI128(operand.U8(1), mask, mhi.AsX())
		ctx.VPMOVSXDQ(mhi.AsX(), mhi)
		ctx.VMASKMOVPD(lo, mlo, operand.Mem{Base: p, Disp: off})
		ctx.VMASKMOVPD(hi, mhi, operand.Mem{Base: p, Disp: off + 32})
	})
}
