package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// rowLongVariant is an arrangement of rowLong: streams far-apart rows
// read at once (4 or 8), a prefetch ahead bytes past each stream's own
// position (0: none), into L1 when t0, lines weight lines of each stream
// an iteration (0: 1), the bfloat16 kernel paced as row16 unless
// unpaced. Only rowLongProduct is generated; doc.go's decode section
// has the others' figures (commit a07283f generated them all).
type rowLongVariant struct {
	suffix      string
	streams     int
	ahead       int
	lines       int
	t0, unpaced bool
}

// rowLongProduct is fwdRowLong's arrangement (fwdRowsLong): four streams,
// each its own line 1 KiB ahead into L2, the read probe's S4T1-1K form.
var rowLongProduct = rowLongVariant{streams: 4, ahead: 1024}

// rowLong generates fwdRowLong<suffix><F32|BF16>(x, w, stride, n, span,
// out): 16 rows as v.streams streams span elements apart, each stream
// 16/v.streams consecutive rows stride apart: out[g'·s+g] (g' = 16/streams
// rows a stream) = Σ_k x[k]·w[s·span+g·stride+k]. Each row is one
// accumulator adding its chunks in ascending order, as fwdRow16 (the bits
// of dotLanes), with row16's widening and pacing. Called for i = 0, g',
// 2g', … over a piece cut into streams sub-ranges (fwdRowsLong), each
// stream is one sequential read across row ends, the read probe's S4T1-1K
// pattern, instead of fwdRow16's four neighbouring rows that restart every
// 2-6 KiB and lean on the next group's prefetch. A stream's own line 1 KiB
// ahead is always the next bytes it reads (past a piece's end it touches
// the next rows, which never faults). On Zen 4, decode's forks on the
// worker pool read 1.04-1.09x as fast as with fwdRow16 (doc.go's decode
// section).
func rowLong(ctx *build.Context, bf bool, v rowLongVariant) {
	w := weightsOf(bf)
	groups := 16 / v.streams
	pace := bf && !v.unpaced
	asmout.Kernel(ctx, "fwdRowLong"+v.suffix+w.Suffix, fmt.Sprintf("func(x *float32, w %s, stride, n, span int, out *[16]float32)", w.GoType))
	if bf {
		ctx.VMOVDQU32(row16WidenCtl, row16Ctl)
	}
	x0, stride, span, span3, base := ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("x"), x0)
	ctx.Load(ctx.Param("stride"), stride)
	ctx.SHLQ(U8(asmout.Log2(w.Size)), stride)
	ctx.Load(ctx.Param("span"), span)
	ctx.SHLQ(U8(asmout.Log2(w.Size)), span)
	ctx.LEAQ(Mem{Base: span, Index: span, Scale: 2}, span3)
	ctx.Load(ctx.Param("w"), base)
	n := ctx.GP64()
	ctx.Load(ctx.Param("n"), n)
	chunks, tail := ctx.GP64(), ctx.GP64()
	ctx.MOVQ(n, chunks)
	ctx.SHRQ(U8(4), chunks)
	ctx.MOVQ(n, tail)
	ctx.ANDQ(U32(15), tail)
	setTailMask(ctx, n)
	for i := range 16 {
		ctx.VPXORD(zmm(i), zmm(i), zmm(i))
	}
	px, pw, cnt := ctx.GP64(), ctx.GP64(), ctx.GP64()
	var pw4 reg.GPVirtual
	if v.streams == 8 {
		pw4 = ctx.GP64()
	}
	u := 64 / (16 * w.Size) // chunks per weight line
	at := func(s, disp int) Mem {
		b := pw
		if s >= 4 {
			b, s = pw4, s-4
		}
		m := Mem{Base: b, Disp: disp}
		switch s {
		case 1, 2:
			m.Index, m.Scale = span, uint8(s)
		case 3:
			m.Index, m.Scale = span3, 1
		}
		return m
	}
	lines := max(v.lines, 1)
	per := u * lines // chunks an iteration
	for g := range groups {
		// weight widens chunk c of stream s at m into z and adds its
		// product with xz to the stream's accumulator.
		weight := func(s int, m Mem, xz reg.VecPhysical, mask reg.Register, line bool) {
			r := s*groups + g
			z := zmm(17 + s%4)
			switch {
			case w.BF && mask == nil:
				ctx.VBROADCASTI32X8(m, z)
				ctx.VPSHUFB(row16Ctl, z, z)
				if pace && line {
					ctx.VPSHUFB(row16Ctl, z, row16Pace)
				}
			case w.BF:
				w.load(ctx, m, z, mask)
				swapQuarters(ctx, z)
			default:
				w.load(ctx, m, z, mask)
			}
			ctx.VFMADD231PS(xz, z, zmm(4*(r%4)+r/4))
		}
		xload := func(c int, xz reg.VecPhysical, mask reg.Register) {
			loadX(ctx, Mem{Base: px, Disp: 64 * c}, xz, mask)
			if w.BF {
				swapQuarters(ctx, xz)
			}
		}
		step := func(mask reg.Register) {
			xload(0, zmm(16), mask)
			for s := range v.streams {
				weight(s, at(s, 0), zmm(16), mask, true)
			}
		}
		loop, rest, restLoop, tl, next := fmt.Sprintf("long%d", g), fmt.Sprintf("rest%d", g), fmt.Sprintf("restloop%d", g), fmt.Sprintf("tail%d", g), fmt.Sprintf("next%d", g)
		ctx.MOVQ(x0, px)
		ctx.MOVQ(base, pw)
		if v.streams == 8 {
			ctx.LEAQ(Mem{Base: base, Index: span, Scale: 4}, pw4)
		}
		ctx.MOVQ(chunks, cnt)
		ctx.SHRQ(U8(asmout.Log2(per)), cnt)
		ctx.TESTQ(cnt, cnt)
		ctx.JZ(LabelRef(rest))
		ctx.Label(loop)
		if lines == 1 {
			if v.ahead > 0 {
				for s := range v.streams {
					if v.t0 {
						ctx.PREFETCHT0(at(s, v.ahead))
					} else {
						ctx.PREFETCHT1(at(s, v.ahead))
					}
				}
			}
			for c := range u {
				loadX(ctx, Mem{Base: px, Disp: 64 * c}, zmm(16), nil)
				if w.BF {
					swapQuarters(ctx, zmm(16))
				}
				for s := range v.streams {
					weight(s, at(s, 16*w.Size*c), zmm(16), nil, c == 0)
				}
			}
		} else {
			// x's chunks in Z23.., then each stream's lines in a burst,
			// as the read probe reads them
			for c := range per {
				xload(c, zmm(23+c), nil)
			}
			for s := range v.streams {
				for l := range lines {
					if v.ahead > 0 {
						ctx.PREFETCHT1(at(s, v.ahead+64*l))
					}
					for c := range u {
						weight(s, at(s, 64*l+16*w.Size*c), zmm(23+l*u+c), nil, c == 0)
					}
				}
			}
		}
		ctx.ADDQ(U32(64*per), px)
		ctx.ADDQ(U32(64*lines), pw)
		if v.streams == 8 {
			ctx.ADDQ(U32(64*lines), pw4)
		}
		ctx.DECQ(cnt)
		ctx.JNZ(LabelRef(loop))
		ctx.Label(rest) // the chunks left, one at a time
		ctx.MOVQ(chunks, cnt)
		ctx.ANDQ(U32(per-1), cnt)
		ctx.JZ(LabelRef(tl))
		ctx.Label(restLoop)
		step(nil)
		ctx.ADDQ(U8(64), px)
		ctx.ADDQ(U8(16*w.Size), pw)
		if v.streams == 8 {
			ctx.ADDQ(U8(16*w.Size), pw4)
		}
		ctx.DECQ(cnt)
		ctx.JNZ(LabelRef(restLoop))
		ctx.Label(tl)
		ctx.TESTQ(tail, tail)
		ctx.JZ(LabelRef(next))
		step(reg.K1)
		ctx.Label(next)
		ctx.ADDQ(stride, base)
	}
	row16Finish(ctx, bf)
}
