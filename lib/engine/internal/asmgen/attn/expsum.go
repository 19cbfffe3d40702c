package main

import (
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// Constants of attnExpSum16, in the order of lib/engine's expSumConsts:
// the row's scale and maximum, then exp32's (log2 e, the rounding
// constant, −ln2 high and low, the eight polynomial coefficients,
// +Inf, the upper and lower limits, and the integer 127 of the
// exponent bias), each broadcast into a register of its own.
const (
	cScale = iota
	cMax
	cLog2e
	cRound
	cLn2Hi
	cLn2Lo
	cPoly // eight coefficients, Horner's order
	cInf  = cPoly + 8
	cHi   = cInf + 1
	cLo   = cHi + 1
	cBias = cLo + 1
	nCons = cBias + 1
)

// consReg is the register holding constant c: Z14-Z31.
func consReg(c int) reg.VecPhysical { return asmout.ZMM(14 + c) }

// expSum16 emits attnExpSum16: exp32(float32(s·scale) − max) over a row
// of n scores in place, each lane lib/engine's exp32 operations in their order, the
// numerators widened to float64 and added to eight lanes (element t to
// lane t mod 8, ascending: expScores32's order) and, when p is not nil,
// stored to p. 32 scores a pass; the last 1..31 through masked loads and
// stores, their unused lanes zeroed before they join the sums. Go's
// archsimd version called a 16-lane exp32 each pass, reloaded its twenty
// constants and spilled around the call.
func expSum16(ctx *build.Context) {
	nilSkips = 0 // labels from the start on every run (TestCommittedOutput)
	asmout.Kernel(ctx, "attnExpSum16", "func(sc *float32, n int, p *float64, c *float32, sums *float64)")
	ctx.Doc("attnExpSum16 replaces n scores by exp32(s·c[0] − c[1]) and adds them to eight float64 lane sums (and stores them to p unless nil).")
	sc := ctx.Load(ctx.Param("sc"), ctx.GP64())
	n := ctx.Load(ctx.Param("n"), ctx.GP64())
	p := ctx.Load(ctx.Param("p"), ctx.GP64())
	c := ctx.Load(ctx.Param("c"), ctx.GP64())
	for i := range nCons {
		if i == cBias {
			ctx.VPBROADCASTD(operand.Mem{Base: c, Disp: 4 * i}, consReg(i))
		} else {
			ctx.VBROADCASTSS(operand.Mem{Base: c, Disp: 4 * i}, consReg(i))
		}
	}
	acc := asmout.ZMM(0)
	ctx.VPXORQ(acc, acc, acc)
	x := [2]reg.VecPhysical{asmout.ZMM(1), asmout.ZMM(2)}
	ctx.CMPQ(n, operand.U8(32))
	ctx.JB(operand.LabelRef("tail"))
	ctx.Label("loop")
	for v := range 2 {
		ctx.VMULPS(operand.Mem{Base: sc, Disp: 64 * v}, consReg(cScale), x[v])
		ctx.VSUBPS(consReg(cMax), x[v], x[v])
	}
	e := exp32x2(ctx, x)
	for v := range 2 {
		ctx.VMOVUPS(e[v], operand.Mem{Base: sc, Disp: 64 * v})
	}
	for v := range 2 {
		widenAdd(ctx, e[v], p, 128*v, nil)
	}
	ctx.ADDQ(operand.U8(128), sc)
	skipNil(ctx, p, func() { ctx.ADDQ(operand.U32(256), p) })
	ctx.SUBQ(operand.U8(32), n)
	ctx.CMPQ(n, operand.U8(32))
	ctx.JAE(operand.LabelRef("loop"))
	ctx.Label("tail")
	tail(ctx, sc, n, p, x)
	sums := ctx.Load(ctx.Param("sums"), ctx.GP64())
	ctx.VMOVUPD(acc, operand.Mem{Base: sums})
	ctx.VZEROUPPER()
	ctx.RET()
}

// tail does the last 1..31 scores sixteen lanes at a time under a mask.
func tail(ctx *build.Context, sc, n, p reg.Register, x [2]reg.VecPhysical) {
	m, k, klo, khi := ctx.GP64(), reg.K1, reg.K2, reg.K3
	ctx.Label("part")
	ctx.TESTQ(n, n)
	ctx.JZ(operand.LabelRef("done"))
	ctx.MOVQ(operand.U32(16), m) // lanes this pass: min(n, 16)
	ctx.CMPQ(n, m)
	ctx.CMOVQLT(n, m)
	ctx.SUBQ(m, n)
	bits := ctx.GP64()
	ctx.MOVQ(operand.U32(1), bits)
	ctx.SHLXQ(m, bits, bits)
	ctx.DECQ(bits)
	ctx.KMOVW(bits.As32(), k)
	ctx.KMOVW(bits.As32(), klo)
	ctx.SHRQ(operand.U8(8), bits)
	ctx.KMOVW(bits.As32(), khi)
	ctx.VMOVUPS_Z(operand.Mem{Base: sc}, k, x[0])
	ctx.VMULPS(consReg(cScale), x[0], x[0])
	ctx.VSUBPS(consReg(cMax), x[0], x[0])
	ctx.VMOVAPS(x[0], x[1]) // a second chain for exp32x2's shape
	e := exp32x2(ctx, x)
	ctx.VMOVAPS_Z(e[0], k, e[0])
	ctx.VMOVUPS(e[0], k, operand.Mem{Base: sc})
	widenAdd(ctx, e[0], p, 0, []reg.Register{klo, khi})
	ctx.ADDQ(operand.U8(64), sc)
	skipNil(ctx, p, func() { ctx.ADDQ(operand.U8(128), p) })
	ctx.JMP(operand.LabelRef("part"))
	ctx.Label("done")
}

var nilSkips int

// skipNil emits body behind a test that p is not nil.
func skipNil(ctx *build.Context, p reg.Register, body func()) {
	nilSkips++
	l := operand.LabelRef("nil" + string(rune('a'+nilSkips)))
	ctx.TESTQ(p, p)
	ctx.JZ(l)
	body()
	ctx.Label(string(l))
}

// widenAdd adds e's lanes, widened to float64, to the sums in Z0, low
// eight then high eight, and stores them to p + off bytes unless p is
// nil (under masks[0] and masks[1] when given).
func widenAdd(ctx *build.Context, e reg.VecPhysical, p reg.Register, off int, masks []reg.Register) {
	lo, hi := asmout.ZMM(11), asmout.ZMM(12)
	ctx.VEXTRACTF64X4(operand.U8(1), e, hi.AsY())
	ctx.VCVTPS2PD(e.AsY(), lo)
	ctx.VCVTPS2PD(hi.AsY(), hi)
	ctx.VADDPD(lo, asmout.ZMM(0), asmout.ZMM(0))
	ctx.VADDPD(hi, asmout.ZMM(0), asmout.ZMM(0))
	skipNil(ctx, p, func() {
		for h, v := range []reg.VecPhysical{lo, hi} {
			m := operand.Mem{Base: p, Disp: off + 64*h}
			if masks != nil {
				ctx.VMOVUPD(v, masks[h], m)
			} else {
				ctx.VMOVUPD(v, m)
			}
		}
	})
}

// exp32x2 is lib/engine's exp32 on the lanes of x[0] and x[1] (left intact), every
// operation the same, with the constants in registers; it returns the
// registers of the results.
func exp32x2(ctx *build.Context, x [2]reg.VecPhysical) [2]reg.VecPhysical {
	var t, r, q [2]reg.VecPhysical
	for v := range 2 {
		t[v], r[v], q[v] = asmout.ZMM(3+4*v), asmout.ZMM(4+4*v), asmout.ZMM(5+4*v)
		k := asmout.ZMM(6 + 4*v)
		ctx.VMOVAPS(x[v], t[v])
		ctx.VFMADD213PS(consReg(cRound), consReg(cLog2e), t[v]) // t = x·log2e + round
		ctx.VSUBPS(consReg(cRound), t[v], k)                    // k = t − round
		ctx.VMOVAPS(x[v], r[v])
		ctx.VFMADD231PS(consReg(cLn2Hi), k, r[v]) // r = k·(−ln2 hi) + x
		ctx.VFMADD231PS(consReg(cLn2Lo), k, r[v]) // r = k·(−ln2 lo) + r
		ctx.VMOVAPS(consReg(cPoly), q[v])
		for i := 1; i < 8; i++ {
			ctx.VFMADD213PS(consReg(cPoly+i), r[v], q[v]) // q = q·r + c_i
		}
		ctx.VPADDD(consReg(cBias), t[v], k) // 2^k's bits: (k + 127) << 23
		ctx.VPSLLD(operand.U8(23), k, k)
		ctx.VMULPS(k, q[v], q[v])
		ctx.VCMPPS(operand.U8(0x1E), consReg(cHi), x[v], reg.K4) // x > hi (ordered)
		ctx.VBLENDMPS(consReg(cInf), q[v], reg.K4, q[v])
		ctx.VCMPPS(operand.U8(0x15), consReg(cLo), x[v], reg.K4) // not x < lo (NaN too)
		ctx.VMOVAPS_Z(q[v], reg.K4, q[v])
	}
	return q
}
