package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// rowPair generates fwdRow16BF16P<g>(x, w, stride, n, out): row16's sums
// over bfloat16 weights stored a row pair at a time (dword k of pair p
// holds row 2p's weight k in its low half and row 2p+1's in its high
// half; stride is a pair's length in uint16), g rows per group.
func rowPair(ctx *build.Context, g int) {
	asmout.Kernel(ctx, fmt.Sprintf("fwdRow16BF16P%d", g), "func(x *float32, w *uint16, stride, n int, out *[16]float32)")
	var a row16Args
	a.x0, a.stride, a.stride3, a.base = ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("x"), a.x0)
	ctx.Load(ctx.Param("stride"), a.stride)
	ctx.SHLQ(U8(1), a.stride)
	ctx.LEAQ(Mem{Base: a.stride, Index: a.stride, Scale: 2}, a.stride3)
	ctx.Load(ctx.Param("w"), a.base)
	n := ctx.GP64()
	ctx.Load(ctx.Param("n"), n)
	a.chunks, a.tail = ctx.GP64(), ctx.GP64()
	ctx.MOVQ(n, a.chunks)
	ctx.SHRQ(U8(4), a.chunks)
	ctx.MOVQ(n, a.tail)
	ctx.ANDQ(U32(15), a.tail)
	setTailMask(ctx, n)
	ctx.MOVL(U32(0xFFFF0000), reg.EAX)
	ctx.VPBROADCASTD(reg.EAX, reg.Z31)
	for i := range 16 {
		ctx.VPXORD(zmm(i), zmm(i), zmm(i))
	}
	a.px, a.pw, a.pn, a.cnt = ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	for r0 := 0; r0 < 16; r0 += g {
		rowPairGroup(ctx, a, r0, g)
	}
	reduce16(ctx)
	out := ctx.GP64()
	ctx.Load(ctx.Param("out"), out)
	ctx.VMOVUPS(reg.Z0, Mem{Base: out})
	ctx.VZEROUPPER()
	ctx.RET()
}

func rowPairGroup(ctx *build.Context, a row16Args, r0, g int) {
	const u = 2
	pairs := g / 2
	pair := func(base reg.GPVirtual, i, disp int) Mem {
		m := Mem{Base: base, Disp: disp}
		switch i {
		case 1, 2:
			m.Index, m.Scale = a.stride, uint8(i)
		case 3:
			m.Index, m.Scale = a.stride3, 1
		}
		return m
	}
	step := func(mask reg.Register, c int) {
		loadX(ctx, Mem{Base: a.px, Disp: 64 * c}, zmm(16), mask)
		for i := range pairs {
			r := r0 + 2*i
			t, lo, hi := zmm(17+3*i), zmm(18+3*i), zmm(19+3*i)
			if mask != nil {
				ctx.VMOVDQU32_Z(pair(a.pw, i, 64*c), mask, t)
			} else {
				ctx.VMOVDQU32(pair(a.pw, i, 64*c), t)
			}
			ctx.VPSLLD(U8(16), t, lo)
			ctx.VPANDD(reg.Z31, t, hi)
			ctx.VFMADD231PS(zmm(16), lo, zmm(4*(r%4)+r/4))
			ctx.VFMADD231PS(zmm(16), hi, zmm(4*((r+1)%4)+(r+1)/4))
		}
	}
	loop, one, tail, next := fmt.Sprintf("row%d", r0), fmt.Sprintf("one%d", r0), fmt.Sprintf("tail%d", r0), fmt.Sprintf("next%d", r0)
	ctx.MOVQ(a.x0, a.px)
	ctx.MOVQ(a.base, a.pw)
	if pairs == 2 {
		ctx.LEAQ(Mem{Base: a.base, Index: a.stride, Scale: 2}, a.pn)
	} else {
		ctx.LEAQ(Mem{Base: a.base, Index: a.stride, Scale: 4}, a.pn)
	}
	ctx.MOVQ(a.chunks, a.cnt)
	ctx.SHRQ(U8(1), a.cnt)
	ctx.TESTQ(a.cnt, a.cnt)
	ctx.JZ(LabelRef(one))
	ctx.Label(loop)
	for i := range pairs {
		ctx.PREFETCHT1(pair(a.pn, i, 0))
		ctx.PREFETCHT1(pair(a.pn, i, 64))
	}
	for c := range u {
		step(nil, c)
	}
	ctx.ADDQ(U8(64*u), a.px)
	ctx.ADDQ(U8(64*u), a.pw)
	ctx.ADDQ(U8(64*u), a.pn)
	ctx.DECQ(a.cnt)
	ctx.JNZ(LabelRef(loop))
	ctx.Label(one)
	ctx.TESTQ(U32(1), a.chunks)
	ctx.JZ(LabelRef(tail))
	step(nil, 0)
	ctx.ADDQ(U8(64), a.px)
	ctx.ADDQ(U8(64), a.pw)
	ctx.Label(tail)
	ctx.TESTQ(a.tail, a.tail)
	ctx.JZ(LabelRef(next))
	step(reg.K1, 0)
	ctx.Label(next)
	if pairs == 2 {
		ctx.LEAQ(Mem{Base: a.base, Index: a.stride, Scale: 2}, a.base)
	} else {
		ctx.LEAQ(Mem{Base: a.base, Index: a.stride, Scale: 4}, a.base)
	}
}
