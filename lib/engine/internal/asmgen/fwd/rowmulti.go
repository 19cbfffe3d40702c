package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// rowMultiVecs are the vector counts of the generated fwdRowMulti
// kernels: a decoding step of two or three rows (fwdRowsLong).
var rowMultiVecs = []int{2, 3}

// rowMulti generates fwdRowMulti<V><F32|BF16>(x0, …, x<V-1>, w, stride,
// n, span, out): fwdRowLong's four streams span elements apart for V
// vectors at once, each weight chunk loaded and widened once for all of
// them: 16/V rows a call rounded down to a power of two (two rows of
// each stream for two vectors, one for three). out[4·g·v + s·g + r]
// (g rows a stream, r < g) = Σ_k x_v[k]·w[s·span + r·stride + k], each
// one accumulator adding its chunks in ascending order with fwdRowLong's
// widening, so every output has the bits of that vector's fwdRowLong
// (and dotLanes). fwdRowLong run once a vector reads each weight line
// again from L1 or L2 and widens it again: at two and three vectors a
// step, the kernel's work grows by a whole one-vector pass a vector.
func rowMulti(ctx *build.Context, bf bool, vecs int) {
	groups := rowMultiGroupsOf(vecs)
	w := weightsOf(bf)
	args := ""
	for v := range vecs {
		args += fmt.Sprintf("x%d, ", v)
	}
	asmout.Kernel(ctx, fmt.Sprintf("fwdRowMulti%d%s", vecs, w.Suffix),
		fmt.Sprintf("func(%s *float32, w %s, stride, n, span int, out *[16]float32)", args[:len(args)-2], w.GoType))
	if bf {
		ctx.VMOVDQU32(row16WidenCtl, row16Ctl)
	}
	xs := make([]reg.GPVirtual, vecs)
	for v := range xs {
		xs[v] = ctx.GP64()
		ctx.Load(ctx.Param(fmt.Sprintf("x%d", v)), xs[v])
	}
	a := loadLongArgs(ctx, w)
	rowMultiGroups(ctx, w, vecs, groups, a, xs, "")
	row16Finish(ctx, bf)
}

// rowMultiGroupsOf is the rows of each stream fwdRowMulti<vecs> takes a
// call: 16/vecs rows a stream rounded down to a power of two.
func rowMultiGroupsOf(vecs int) int {
	const streams = 4
	groups := 1
	for 2*groups*streams*vecs <= 16 {
		groups *= 2
	}
	return groups
}

// rowMultiGroups emits fwdRowMulti's groups row groups (rows i..i+groups-1
// of each stream from a.base, which they leave groups rows on) for the
// vectors at xs into the accumulators; label tells the loops' labels
// apart where a function emits them more than once.
func rowMultiGroups(ctx *build.Context, w weights, vecs, groups int, a longArgs, xs []reg.GPVirtual, label string) {
	const streams = 4
	pc, pw, cnt := ctx.GP64(), ctx.GP64(), ctx.GP64()
	u := 64 / (16 * w.Size) // chunks per weight line
	at := func(s, disp int) Mem { return a.at(pw, s, disp) }
	// xz is vector v's chunk: Z16, Z23, Z24 (Z17-Z20 the streams'
	// weights, Z21 the widening's control).
	xz := func(v int) reg.VecPhysical { return []reg.VecPhysical{reg.Z16, reg.Z23, reg.Z24}[v] }
	// acc is the accumulator of out[i], as row16Finish's tree reads them
	// (fwdRowLong's row i in zmm(4·(i%4) + i/4)).
	acc := func(v, s, g int) reg.VecPhysical {
		i := 4*groups*v + s*groups + g
		return zmm(4*(i%4) + i/4)
	}
	for g := range groups {
		weight := func(s int, m Mem, mask reg.Register) {
			z := zmm(17 + s)
			switch {
			case w.BF && mask == nil:
				ctx.VBROADCASTI32X8(m, z)
				ctx.VPSHUFB(row16Ctl, z, z)
			case w.BF:
				w.load(ctx, m, z, mask)
				swapQuarters(ctx, z)
			default:
				w.load(ctx, m, z, mask)
			}
			for v := range vecs {
				ctx.VFMADD231PS(xz(v), z, acc(v, s, g))
			}
		}
		xload := func(c int, mask reg.Register) {
			for v := range vecs {
				loadX(ctx, Mem{Base: xs[v], Index: pc, Scale: 1, Disp: 64 * c}, xz(v), mask)
				if w.BF {
					swapQuarters(ctx, xz(v))
				}
			}
		}
		step := func(mask reg.Register) {
			xload(0, mask)
			for s := range streams {
				weight(s, at(s, 0), mask)
			}
		}
		a.group(ctx, label, g, u, w.Size, pc, pw, cnt, func() { ctx.XORQ(pc, pc) }, func() {
			for s := range streams {
				ctx.PREFETCHT1(at(s, rowLongAhead))
			}
			for c := range u {
				xload(c, nil)
				for s := range streams {
					weight(s, at(s, 16*w.Size*c), nil)
				}
			}
		}, step)
	}
}

// rowsMulti generates fwdRowsMulti<V><F32|BF16>(x0, …, x<V-1>, w, stride,
// n, span, rows, y0, …, y<V-1>, ystride, acc): fwdRowMulti<V> over rows
// rows of each of the four streams (a multiple of its rows a call) in one
// call, each vector's sums stored to y_v[s·ystride + i] (or added to
// them where acc is not 0: y + v, putRow's order). The same accumulators,
// order and tree as fwdRowMulti a call at a time, so the same bits; what
// it saves is fwdRowsMulti's Go loop (a call, the 16 sums through memory
// and a putRow a stream and vector every one or two rows), the cost
// rowsLong took out of fwdRowsLong. The y pointers and the block count
// live in the frame: the loop's registers (three x pointers, the long
// arguments and the group's counters) leave none for them.
func rowsMulti(ctx *build.Context, bf bool, vecs int) {
	groups := rowMultiGroupsOf(vecs)
	w := weightsOf(bf)
	xargs, yargs := "", ""
	for v := range vecs {
		xargs += fmt.Sprintf("x%d, ", v)
		yargs += fmt.Sprintf("y%d, ", v)
	}
	asmout.Kernel(ctx, fmt.Sprintf("fwdRowsMulti%d%s", vecs, w.Suffix),
		fmt.Sprintf("func(%s *float32, w %s, stride, n, span, rows int, %s *float32, ystride, acc int)",
			xargs[:len(xargs)-2], w.GoType, yargs[:len(yargs)-2]))
	blocks := ctx.AllocLocal(8)
	yl := ctx.AllocLocal(8 * vecs)
	yat := func(v int) Mem { return yl.Offset(8 * v) }
	if bf {
		ctx.VMOVDQU32(row16WidenCtl, row16Ctl)
	}
	{
		t := ctx.GP64()
		for v := range vecs {
			ctx.Load(ctx.Param(fmt.Sprintf("y%d", v)), t)
			ctx.MOVQ(t, yat(v))
		}
		ctx.Load(ctx.Param("rows"), t)
		ctx.SHRQ(U8(asmout.Log2(groups)), t)
		ctx.MOVQ(t, blocks)
		ctx.TESTQ(t, t)
		ctx.JZ(LabelRef("done"))
	}
	xs := make([]reg.GPVirtual, vecs)
	for v := range xs {
		xs[v] = ctx.GP64()
		ctx.Load(ctx.Param(fmt.Sprintf("x%d", v)), xs[v])
	}
	a := loadLongArgs(ctx, w)
	ctx.Label("block")
	rowMultiGroups(ctx, w, vecs, groups, a, xs, "b")
	if bf {
		for i := range 16 { // the lanes back in column order, for the tree
			swapQuarters(ctx, zmm(i))
		}
	}
	reduce16(ctx)
	// Z0's lane 4·groups·v + s·groups + r is vector v's stream s, row r.
	ys, yp, y2, flag := ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("ystride"), ys)
	ctx.SHLQ(U8(2), ys)
	ctx.Load(ctx.Param("acc"), flag)
	// out is stream s's row in the vector at yp (y2 = yp + 2·ystride).
	out := streamRows(yp, y2, ys)
	// X1 and X2 are free: the tree leaves the sums in Z0, and the
	// accumulators are cleared after the stores.
	for v := range vecs {
		ctx.MOVQ(yat(v), yp)
		ctx.LEAQ(Mem{Base: yp, Index: ys, Scale: 2}, y2)
		add, stored := fmt.Sprintf("add%d", v), fmt.Sprintf("stored%d", v)
		ctx.TESTQ(flag, flag)
		ctx.JNZ(LabelRef(add))
		switch groups {
		case 2: // quarter 2v+h: streams 2h and 2h+1, two rows each
			for h := range 2 {
				ctx.VEXTRACTF32X4(U8(2*v+h), reg.Z0, reg.X1)
				ctx.VMOVLPS(reg.X1, out(2*h))
				ctx.VMOVHPS(reg.X1, out(2*h+1))
			}
		case 1: // quarter v: the four streams' rows
			ctx.VEXTRACTF32X4(U8(v), reg.Z0, reg.X1)
			ctx.VMOVSS(reg.X1, out(0))
			for s := 1; s < 4; s++ {
				ctx.VEXTRACTPS(U8(s), reg.X1, out(s))
			}
		default:
			panic(fmt.Sprintf("rowsMulti: %d rows a stream", groups))
		}
		ctx.JMP(LabelRef(stored))
		ctx.Label(add)
		switch groups {
		case 2:
			for h := range 2 {
				ctx.VEXTRACTF32X4(U8(2*v+h), reg.Z0, reg.X1)
				ctx.VMOVSD(out(2*h), reg.X2)
				ctx.VMOVHPS(out(2*h+1), reg.X2, reg.X2)
				ctx.VADDPS(reg.X1, reg.X2, reg.X2) // y + v, the first operand y
				ctx.VMOVLPS(reg.X2, out(2*h))
				ctx.VMOVHPS(reg.X2, out(2*h+1))
			}
		case 1:
			ctx.VEXTRACTF32X4(U8(v), reg.Z0, reg.X1)
			ctx.VMOVSS(out(0), reg.X2)
			for s := 1; s < 4; s++ {
				ctx.VINSERTPS(U8(s<<4), out(s), reg.X2, reg.X2)
			}
			ctx.VADDPS(reg.X1, reg.X2, reg.X2)
			ctx.VMOVSS(reg.X2, out(0))
			for s := 1; s < 4; s++ {
				ctx.VEXTRACTPS(U8(s), reg.X2, out(s))
			}
		}
		ctx.Label(stored)
		ctx.ADDQ(U8(4*groups), yat(v))
	}
	nextBlock(ctx, blocks)
}
