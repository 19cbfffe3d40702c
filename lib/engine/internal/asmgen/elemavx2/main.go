// Command elemavx2 generates lib/engine/kernels_exp_avx2_amd64.s and its
// Go declarations: the loss's float64 exponentials over a vocabulary's row
// for CPUs with AVX2 and FMA3 but without AVX-512. Run it through go
// generate in lib/engine.
//
// Each kernel computes exp64(float64(logits[i])·invT − mx) lane for lane
// with exp4x2's operations in its order (kernels_elem_simd.go: the same
// multiplies, subtractions and fused multiply-adds, the same constants,
// read from the engine's expTab4), so the bits are exp64's. What differs
// is the schedule: eight vectors of four lanes (32 logits) a pass, so that
// eight independent Horner chains of thirteen fused multiply-adds keep
// both FMA units busy (four cycles' latency each), where the compiled
// archsimd loops ran two or four chains and waited on them.
package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/printer"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// Outputs, relative to lib/engine (where go generate runs this).
const (
	asmFile  = "kernels_exp_avx2_amd64.s"
	stubFile = "kernels_exp_avx2_stubs_amd64.go"
)

// chains is the vectors of four logits a pass takes: 8 accumulating
// polynomials and their 8 arguments fill the 16 YMM registers.
const chains = 8

// The rows of expTab4 (lib/engine/kernels_exp_avx2_amd64.go), four equal
// float64s (or uint64s) each: its layout, which that file's test pins.
const (
	tabLog2e = iota
	tabRound
	tabNegLn2Hi
	tabNegLn2Lo
	tabPoly // 14 rows: expPoly
	tabBias = tabPoly + 14
	tabHi   = tabBias + 1
	tabLo   = tabHi + 1
	tabInf  = tabLo + 1
	tabZero = tabInf + 1
	tabRows = tabZero + 1
)

// The comparison predicates archsimd's Greater and Less compile to.
const (
	cmpGT = 14 // GT_OS
	cmpLT = 1  // LT_OS
)

func main() {
	asm, stubs, err := Generate()
	if err != nil {
		asmout.Fail("elemavx2", err)
	}
	asmout.Write("elemavx2", map[string][]byte{asmFile: asm, stubFile: stubs})
}

// Generate returns the assembly and its Go declarations.
func Generate() (asm, stubs []byte, err error) {
	ctx := build.NewContext()
	expKernel(ctx, "exp64KeepAVX2", "func(dst *float64, logits *float32, n int, invT float64, mx float64, s *float64)", true, true)
	expKernel(ctx, "exp64SumAVX2", "func(logits *float32, n int, invT float64, mx float64, s *float64)", false, true)
	expKernel(ctx, "exp64ScaledAVX2", "func(dst *float64, logits *float32, n int, invT float64, mx float64)", true, false)
	return asmout.Print(ctx, printer.Config{Name: "lib/engine/internal/asmgen/elemavx2", Pkg: "engine"})
}

// ymm is Y0..Y15 by number.
func ymm(i int) reg.VecPhysical {
	return []reg.VecPhysical{
		reg.Y0, reg.Y1, reg.Y2, reg.Y3, reg.Y4, reg.Y5, reg.Y6, reg.Y7,
		reg.Y8, reg.Y9, reg.Y10, reg.Y11, reg.Y12, reg.Y13, reg.Y14, reg.Y15,
	}[i]
}

// expKernel emits a kernel over n logits (a multiple of 32): with store
// it writes the exponentials to dst, with sum it adds them to s's eight
// lanes (lane l the logits i ≡ l (mod 8) in ascending i, starting from
// s's values: sumLanes' order).
func expKernel(ctx *build.Context, name, sig string, store, sum bool) {
	ctx.Function(name)
	// Not NOSPLIT: the spill slots below make a frame.
	ctx.SignatureExpr(sig)
	ctx.Pragma("noescape")
	what := map[[2]bool]string{{true, true}: "stores and sums", {false, true}: "sums", {true, false}: "stores"}[[2]bool{store, sum}]
	ctx.Doc(fmt.Sprintf("%s %s exp64(float64(logits[i])·invT − mx) for n logits, a multiple of 32.", name, what))
	// Locals: invT and mx broadcast, the two sums, each chain's argument
	// x and its rounded t (finish needs both; no register is free then).
	loc := ctx.AllocLocal(32 * (4 + 2*chains))
	at := func(i int) operand.Mem { return loc.Offset(32 * i) }
	invT, mx, lo, hi := at(0), at(1), at(2), at(3)
	xAt := func(j int) operand.Mem { return at(4 + j) }
	tAt := func(j int) operand.Mem { return at(4 + chains + j) }

	var dst, s reg.Register
	if store {
		dst = ctx.Load(ctx.Param("dst"), ctx.GP64())
	}
	src := ctx.Load(ctx.Param("logits"), ctx.GP64())
	n := ctx.Load(ctx.Param("n"), ctx.GP64())
	tab := ctx.GP64()
	ctx.LEAQ(operand.NewDataAddr(operand.Symbol{Name: "·expTab4"}, 0), tab)
	c := func(row int) operand.Mem { return operand.Mem{Base: tab, Disp: 32 * row} }
	for _, p := range []struct {
		name string
		m    operand.Mem
	}{{"invT", invT}, {"mx", mx}} {
		x := ctx.Load(ctx.Param(p.name), ctx.XMM())
		ctx.VBROADCASTSD(x, ymm(0))
		ctx.VMOVUPD(ymm(0), p.m)
	}
	if sum {
		s = ctx.Load(ctx.Param("s"), ctx.GP64())
		ctx.VMOVUPD(operand.Mem{Base: s}, ymm(0))
		ctx.VMOVUPD(ymm(0), lo)
		ctx.VMOVUPD(operand.Mem{Base: s, Disp: 32}, ymm(0))
		ctx.VMOVUPD(ymm(0), hi)
	}
	r := func(j int) reg.VecPhysical { return ymm(j) }
	p := func(j int) reg.VecPhysical { return ymm(chains + j) }

	ctx.TESTQ(n, n)
	ctx.JZ(operand.LabelRef("done"))
	ctx.Label("loop")
	// The argument and its reduction: x = float64(logit)·invT − mx,
	// t = x·log2e + round, k = t − round, r = x − k·ln2 in two parts.
	for j := range chains {
		x, t := r(j), p(j)
		ctx.VCVTPS2PD(operand.Mem{Base: src, Disp: 16 * j}, x)
		ctx.VMULPD(invT, x, x)
		ctx.VSUBPD(mx, x, x)
		ctx.VMOVUPD(x, xAt(j))
		ctx.VMOVUPD(c(tabLog2e), t)
		ctx.VFMADD213PD(c(tabRound), x, t)
		ctx.VMOVUPD(t, tAt(j))
		ctx.VSUBPD(c(tabRound), t, t)
		ctx.VFMADD231PD(c(tabNegLn2Hi), t, x)
		ctx.VFMADD231PD(c(tabNegLn2Lo), t, x)
	}
	// Horner's rule, the chains interleaved.
	for j := range chains {
		ctx.VMOVUPD(c(tabPoly), p(j))
		ctx.VFMADD213PD(c(tabPoly+1), r(j), p(j))
	}
	for k := 2; k < 14; k++ {
		for j := range chains {
			ctx.VFMADD213PD(c(tabPoly+k), r(j), p(j))
		}
	}
	// p·2^k, then +Inf above expHi and 0 below expLo.
	for j := range chains {
		u, y := r(j), p(j)
		ctx.VMOVDQU(tAt(j), u)
		ctx.VPADDQ(c(tabBias), u, u)
		ctx.VPSLLQ(operand.U8(52), u, u)
		ctx.VMULPD(u, y, y)
		ctx.VMOVUPD(xAt(j), u)
		ctx.VCMPPD(operand.U8(cmpGT), c(tabHi), u, u)
		ctx.VBLENDVPD(u, c(tabInf), y, y)
		ctx.VMOVUPD(xAt(j), u)
		ctx.VCMPPD(operand.U8(cmpLT), c(tabLo), u, u)
		ctx.VBLENDVPD(u, c(tabZero), y, y)
		if store {
			ctx.VMOVUPD(y, operand.Mem{Base: dst, Disp: 32 * j})
		}
	}
	if sum {
		for half, m := range []operand.Mem{lo, hi} {
			a := r(half)
			ctx.VMOVUPD(m, a)
			for j := half; j < chains; j += 2 {
				ctx.VADDPD(p(j), a, a)
			}
			ctx.VMOVUPD(a, m)
		}
	}
	ctx.ADDQ(operand.U32(4*4*chains), src)
	if store {
		ctx.ADDQ(operand.U32(8*4*chains), dst)
	}
	ctx.SUBQ(operand.U32(4*chains), n)
	ctx.JNZ(operand.LabelRef("loop"))
	ctx.Label("done")
	if sum {
		ctx.VMOVUPD(lo, ymm(0))
		ctx.VMOVUPD(ymm(0), operand.Mem{Base: s})
		ctx.VMOVUPD(hi, ymm(0))
		ctx.VMOVUPD(ymm(0), operand.Mem{Base: s, Disp: 32})
	}
	ctx.VZEROUPPER()
	ctx.RET()
}
