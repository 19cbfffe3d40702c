package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// rowLongAhead is how far past its own line each of fwdRowLong's streams
// prefetches into L2: 1 KiB, the read probe's S4T1-1K form. Other
// arrangements (eight streams, other distances, into L1, bursts of lines)
// read no faster; their figures are in
// (docs/engine-decoding.md, "A row kernel with four long streams (fwdRowLong)"),
// commit a07283f has their generator; rowLongVariants has the later ones.
const rowLongAhead = 1024

// rowLongVariant is one arrangement of rowLong for the fast-phase
// measurements (BenchmarkRowLong, BenchmarkDecodeAheadTokens; the engine's
// rowLongVariant selects one): each stream's prefetch ahead bytes past its
// own line into L2 (0: none). The product's is the first. Longer distances,
// PREFETCHNTA, PREFETCHT0 and an x with its quarters swapped ahead were
// measured and dropped (2026-11-30;
// docs/engine-decoding.md, "Prefetch distances and hints", "The variants in a quiet run").
type rowLongVariant struct {
	suffix  string
	ahead   int
	unpaced bool // without row16's pacing shuffle
	l1Ahead int  // where not 0, each stream's line that far ahead into L1 too (PREFETCHT0)
}

// rowLongVariants are generated beside the product's kernel, which is
// first.
var rowLongVariants = []rowLongVariant{
	{"", rowLongAhead, true, 0},
	{"A1KP", rowLongAhead, false, 0}, // the product's before (paced)
	{"A0", 0, true, 0},
}

// rowLong generates fwdRowLong<F32|BF16>(x, w, stride, n, span, out): 16
// rows as four streams span elements apart, each stream four consecutive
// rows stride apart: out[4s+g] = Σ_k x[k]·w[s·span+g·stride+k]. Each row is
// one accumulator adding its chunks in ascending order, as fwdRow16 (the
// bits of dotLanes), with row16's widening but not its pacing shuffle
// (unpaced; the loop reads 1.26x as fast from L2 and 1.2x from L3 without
// it, and decodes level;
// docs/engine-decoding.md, "The row kernel's pace, again (fwdRowLong unpaced)").
// Called for i = 0, 4, 8, … over a piece cut into four sub-ranges
// (fwdRowsLong), each stream is one sequential read across row ends, the
// read probe's S4T1-1K pattern, instead of fwdRow16's four neighbouring rows
// that restart every 2-6 KiB and lean on the next group's prefetch. A
// stream's own line rowLongAhead on is always the next bytes it reads (past
// a piece's end it touches the next rows, which never faults). On Zen 4,
// decode's forks on the worker pool read 1.04-1.09x as fast as with fwdRow16
// (docs/engine-decoding.md, "A row kernel with four long streams (fwdRowLong)").
func rowLong(ctx *build.Context, bf bool, v rowLongVariant) {
	w := weightsOf(bf)
	asmout.Kernel(ctx, "fwdRowLong"+v.suffix+w.Suffix, fmt.Sprintf("func(x *float32, w %s, stride, n, span int, out *[16]float32)", w.GoType))
	if bf {
		ctx.VMOVDQU32(row16WidenCtl, row16Ctl)
	}
	x0 := ctx.GP64()
	ctx.Load(ctx.Param("x"), x0)
	a := loadLongArgs(ctx, w)
	rowLongGroups(ctx, w, v, a, x0, "")
	row16Finish(ctx, bf)
}

// rowLongGroups emits fwdRowLong's four row groups (rows i..i+3 of each
// stream from a.base, which they leave four rows on) into the 16
// accumulators; label tells the loops' labels apart where a function
// emits them more than once.
func rowLongGroups(ctx *build.Context, w weights, v rowLongVariant, a longArgs, x0 reg.GPVirtual, label string) {
	const streams, groups = 4, 4
	px, pw, cnt := ctx.GP64(), ctx.GP64(), ctx.GP64()
	u := 64 / (16 * w.Size) // chunks per weight line
	at := func(s, disp int) Mem { return a.at(pw, s, disp) }
	for g := range groups {
		// weight widens chunk c of stream s at m into z and adds its
		// product with xz to the stream's accumulator; paced, the pacing
		// shuffle once a weight line (line).
		weight := func(s int, m Mem, xz reg.VecPhysical, mask reg.Register, line bool) {
			r := s*groups + g
			z := zmm(17 + s)
			switch {
			case w.BF && mask == nil:
				ctx.VBROADCASTI32X8(m, z)
				ctx.VPSHUFB(row16Ctl, z, z)
				if line && !v.unpaced {
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
		xload := func(c int, mask reg.Register) {
			loadX(ctx, Mem{Base: px, Disp: 64 * c}, zmm(16), mask)
			if w.BF {
				swapQuarters(ctx, zmm(16))
			}
		}
		step := func(mask reg.Register) {
			xload(0, mask)
			for s := range streams {
				weight(s, at(s, 0), zmm(16), mask, true)
			}
		}
		a.group(ctx, label, g, u, w.Size, px, pw, cnt, func() { ctx.MOVQ(x0, px) }, func() {
			for s := range streams {
				if v.ahead > 0 {
					ctx.PREFETCHT1(at(s, v.ahead))
				}
				if v.l1Ahead > 0 {
					ctx.PREFETCHT0(at(s, v.l1Ahead))
				}
			}
			for c := range u {
				xload(c, nil)
				for s := range streams {
					weight(s, at(s, 16*w.Size*c), zmm(16), nil, c == 0)
				}
			}
		}, step)
	}
}

// rowsLongVariants are rowsLong's arrangements: the product's first
// (rowLongVariants' first), then T0, its weights also prefetched 256
// bytes ahead into L1.
var rowsLongVariants = []rowLongVariant{
	rowLongVariants[0],
	{"T0", rowLongAhead, true, 256},
}

// rowsLong generates fwdRowsLong<v><F32|BF16>(x, w, stride, n, span, rows,
// y, ystride, acc): fwdRowLong (the product's arrangement) over rows rows
// of each of the four streams (a multiple of four) in one call, each four
// rows of a stream to y[s·ystride+i..+3] (stored, or added to y where acc
// is not 0: y + v, putRow's order). The same accumulators, order and tree
// as fwdRowLong a call per four rows, so the same bits. The read ladder
// between the probe and the kernel (BenchmarkReadLadder) put most of the
// kernel's distance from the probe in the Go loop around fwdRowLong: its
// calls and their reductions cost 1-2%, the outputs' copies (putRow) 3%,
// the selected kernel's indirect call and the loop's bookkeeping 3-4%, on
// one core and two; one call a piece read 1.05-1.06x as fast as the loop
// (docs/engine-decoding.md, "The read ladder").
func rowsLong(ctx *build.Context, bf bool, v rowLongVariant) {
	w := weightsOf(bf)
	asmout.Kernel(ctx, "fwdRowsLong"+v.suffix+w.Suffix, fmt.Sprintf("func(x *float32, w %s, stride, n, span, rows int, y *float32, ystride, acc int)", w.GoType))
	if bf {
		ctx.VMOVDQU32(row16WidenCtl, row16Ctl)
	}
	x0 := ctx.GP64()
	ctx.Load(ctx.Param("x"), x0)
	a := loadLongArgs(ctx, w)
	blocks, y := ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("rows"), blocks)
	ctx.SHRQ(U8(2), blocks)
	ctx.Load(ctx.Param("y"), y)
	ctx.TESTQ(blocks, blocks)
	ctx.JZ(LabelRef("done"))
	ctx.Label("block")
	rowLongGroups(ctx, w, v, a, x0, "b")
	if bf {
		for i := range 16 { // the lanes back in column order, for the tree
			swapQuarters(ctx, zmm(i))
		}
	}
	reduce16(ctx)
	// Z0's quarter s is stream s's four rows: y + s·ystride floats.
	ys, y2 := ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("ystride"), ys)
	ctx.SHLQ(U8(2), ys)
	ctx.LEAQ(Mem{Base: y, Index: ys, Scale: 2}, y2)
	out := streamRows(y, y2, ys)
	flag := ctx.GP64()
	ctx.Load(ctx.Param("acc"), flag)
	ctx.TESTQ(flag, flag)
	ctx.JNZ(LabelRef("add"))
	for s := range 4 {
		ctx.VEXTRACTF32X4(U8(s), reg.Z0, out(s))
	}
	ctx.JMP(LabelRef("stored"))
	ctx.Label("add")
	for s := range 4 {
		ctx.VEXTRACTF32X4(U8(s), reg.Z0, reg.X16)
		ctx.VMOVUPS(out(s), reg.X17)
		ctx.VADDPS(reg.X16, reg.X17, reg.X17) // y + v, the first operand y
		ctx.VMOVUPS(reg.X17, out(s))
	}
	ctx.Label("stored")
	ctx.ADDQ(U8(16), y)
	nextBlock(ctx, blocks)
}

// nextBlock ends a long-stream kernel's block: the 16 accumulators
// zeroed, back to "block" while blocks (a register or a local) counts
// down, then "done" and the return.
func nextBlock(ctx *build.Context, blocks Op) {
	for i := range 16 {
		ctx.VPXORD(zmm(i), zmm(i), zmm(i))
	}
	ctx.DECQ(blocks)
	ctx.JNZ(LabelRef("block"))
	ctx.Label("done")
	ctx.VZEROUPPER()
	ctx.RET()
}

// longArgs are the registers the long-stream kernels (fwdRowLong,
// fwdRowMulti) share: rows stride bytes apart, streams span bytes apart
// (span3 three spans), base the weights, chunks and tail the 16-column
// chunks of a row and the columns past them.
type longArgs struct{ stride, span, span3, base, chunks, tail reg.GPVirtual }

// loadLongArgs loads the arguments stride, span, w and n as longArgs,
// sets the tail's mask and zeroes the 16 accumulators. The kernels load
// their vectors' pointers first.
func loadLongArgs(ctx *build.Context, w weights) longArgs {
	stride, span, span3, base := ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
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
	return longArgs{stride, span, span3, base, chunks, tail}
}

// at is stream s's weights disp bytes past pw (pw walks stream 0).
func (a longArgs) at(pw reg.GPVirtual, s, disp int) Mem { return nth(pw, s, disp, a.span, a.span3) }

// nth addresses item i (0-3) of four laid d bytes apart, disp bytes past
// base, with d and 3·d in registers: base+i·d by the scaled index where
// one reaches (1, 2), d3 for the third.
func nth(base reg.GPVirtual, i, disp int, d, d3 reg.GPVirtual) Mem {
	m := Mem{Base: base, Disp: disp}
	switch i {
	case 1, 2:
		m.Index, m.Scale = d, uint8(i)
	case 3:
		m.Index, m.Scale = d3, 1
	}
	return m
}

// group emits one row group of a long-stream kernel: start points px at
// the vectors' first chunk (px advances 64 bytes a chunk of x, pw 16
// weights of size bytes), line is one pass over a weight line of every
// stream (u chunks), step one chunk (masked by K1 for the tail). The
// chunks past whole lines go one at a time, then the masked tail; base
// then moves to the group's next rows. label goes before its labels'
// numbers (a kernel emitting groups in two loops).
func (a longArgs) group(ctx *build.Context, label string, g, u, size int, px, pw, cnt reg.GPVirtual, start, line func(), step func(mask reg.Register)) {
	loop, rest, restLoop, tl, next := fmt.Sprintf("long%s%d", label, g), fmt.Sprintf("rest%s%d", label, g), fmt.Sprintf("restloop%s%d", label, g), fmt.Sprintf("tail%s%d", label, g), fmt.Sprintf("next%s%d", label, g)
	start()
	ctx.MOVQ(a.base, pw)
	ctx.MOVQ(a.chunks, cnt)
	ctx.SHRQ(U8(asmout.Log2(u)), cnt)
	ctx.TESTQ(cnt, cnt)
	ctx.JZ(LabelRef(rest))
	ctx.Label(loop)
	line()
	ctx.ADDQ(U32(64*u), px)
	ctx.ADDQ(U32(64), pw)
	ctx.DECQ(cnt)
	ctx.JNZ(LabelRef(loop))
	ctx.Label(rest) // the chunks left, one at a time
	ctx.MOVQ(a.chunks, cnt)
	ctx.ANDQ(U32(u-1), cnt)
	ctx.JZ(LabelRef(tl))
	ctx.Label(restLoop)
	step(nil)
	ctx.ADDQ(U8(64), px)
	ctx.ADDQ(U8(16*size), pw)
	ctx.DECQ(cnt)
	ctx.JNZ(LabelRef(restLoop))
	ctx.Label(tl)
	ctx.TESTQ(a.tail, a.tail)
	ctx.JZ(LabelRef(next))
	step(reg.K1)
	ctx.Label(next)
	ctx.ADDQ(a.stride, a.base)
}

// streamRows addresses the four streams' output rows of a vector at y,
// ys bytes apart, with y2 = y + 2·ys: stream s's row is out(s).
func streamRows(y, y2, ys reg.Register) func(s int) Mem {
	return func(s int) Mem {
		switch s {
		case 0:
			return Mem{Base: y}
		case 1:
			return Mem{Base: y, Index: ys, Scale: 1}
		case 2:
			return Mem{Base: y2}
		}
		return Mem{Base: y2, Index: ys, Scale: 1}
	}
}
