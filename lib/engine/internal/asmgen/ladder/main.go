// Command ladder generates lib/engine/ladder_amd64.s and its Go
// declarations: the rungs of BenchmarkReadLadder, loops between the read
// probe (readS4T1: four streams, 256 bytes of each a step, every line
// prefetched 1 KiB ahead into L2) and the bfloat16 one-sequence row kernel
// (fwdRowLongBF16), each adding one part of the kernel's work to the one
// before, so the benchmark can say which part costs the kernel its share of
// the probe's bandwidth. None is used outside the benchmark and its test.
//
// Usage (from lib/engine, see the go:generate line in
// ladder_bench_amd64_test.go):
//
//	go run ./internal/asmgen/ladder -out ladder_amd64.s -stubs ladder_stub_amd64.go
package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/printer"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

func main() {
	asmout.Main("ladder", "ladder_amd64.s", "ladder_stub_amd64.go", Generate)
}

// Generate returns the assembly and the Go declarations.
func Generate() (asm, decl []byte, err error) {
	ctx := build.NewContext()
	widenCtl = ctx.StaticGlobal("ladderWidenCtl")
	ctx.DataAttributes(attr.RODATA | attr.NOPTR)
	for q := range 4 { // row16WidenCtl's bytes (asmgen/fwd)
		for i := range 4 {
			j := i + 4*(q/2)
			ctx.AddDatum(16*q+4*i, U32(0x8080|(2*j)<<16|(2*j+1)<<24))
		}
	}
	for _, r := range rungs {
		burst(ctx, r)
	}
	order(ctx, false, 1, false)
	order(ctx, true, 1, false)
	order(ctx, true, 4, false)
	order(ctx, true, 1, true)
	order(ctx, true, 8, true)
	xAhead = 512
	order(ctx, true, 1, false)
	xAhead = 0
	orderStreams = 2
	order(ctx, true, 1, false)
	orderStreams = 4
	wAheadL1 = 256
	order(ctx, true, 1, false)
	wAheadL1 = 0
	pairs(ctx)
	blocked(ctx)
	return asmout.Print(ctx, printer.Config{Argv: []string{"go", "run", "./internal/asmgen/ladder"}, Pkg: "engine"})
}

// widenCtl is the VPSHUFB control of fwdRowLong's bfloat16 widening
// (row16WidenCtl in asmgen/fwd): a broadcast chunk's bfloat16 into the
// upper halves of the 32-bit lanes, quarters 1 and 2 swapped.
var widenCtl Mem

// rung is one of the probe-shaped loops (burst): what each weight line
// gets besides its prefetch and load.
type rung struct {
	name string
	// widen: each line's two 16-weight chunks broadcast and widened as
	// fwdRowLong does (VBROADCASTI32X8, VPSHUFB) and each multiplied into
	// an accumulator with its x chunk (loaded and quarter-swapped once a
	// step for the four streams); else the line is one float32 FMA's
	// memory operand, with x's four chunks loaded once a step.
	widen bool
	// chains: one accumulator a stream, every product of the stream's
	// lines added in order (fwdRowLong's per-row chain, two FMAs a line);
	// else one a line of a step (16, independent).
	chains bool
}

var rungs = []rung{
	{"ladderFMA", false, false},
	{"ladderWiden", true, false},
	{"ladderChains", true, true},
}

func z(i int) reg.VecPhysical { return asmout.ZMM(i) }

// burst generates <name>(w, stride, n, dist, x, out): the read probe's
// readS4T1 loop (four streams stride bytes apart from w, each read 256
// bytes a step for n steps, every line prefetched dist bytes ahead into
// L2, the lines of a stream in a burst of four) with the rung's
// arithmetic on each line. out gets the accumulators' sum (lane by lane),
// so the arithmetic cannot be skipped and a test can check it.
func burst(ctx *build.Context, r rung) {
	asmout.Kernel(ctx, r.name, "func(w *uint16, stride, n, dist int, x *float32, out *[16]float32)")
	p := make([]reg.GPVirtual, 4)
	p[0] = ctx.GP64()
	ctx.Load(ctx.Param("w"), p[0])
	stride, cnt, dist, px := ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("stride"), stride)
	ctx.Load(ctx.Param("n"), cnt)
	ctx.Load(ctx.Param("dist"), dist)
	ctx.Load(ctx.Param("x"), px)
	for s := 1; s < 4; s++ {
		p[s] = ctx.GP64()
		ctx.LEAQ(Mem{Base: p[s-1], Index: stride, Scale: 1}, p[s])
	}
	// Z0-Z15 accumulators, Z16-Z23 x, Z24 the control, Z25-Z28 widened
	// weights (one a stream).
	for i := range 16 {
		ctx.VPXORD(z(i), z(i), z(i))
	}
	if r.widen {
		ctx.VMOVDQU32(widenCtl, z(24))
	}
	ctx.TESTQ(cnt, cnt)
	ctx.JZ(LabelRef(r.name + "_done"))
	ctx.Label(r.name + "_loop")
	if r.widen {
		for c := range 8 {
			ctx.VMOVUPS(Mem{Base: px, Disp: 64 * c}, z(16+c))
			ctx.VSHUFF32X4(U8(0xD8), z(16+c), z(16+c), z(16+c))
		}
	} else {
		for l := range 4 {
			ctx.VMOVUPS(Mem{Base: px, Disp: 64 * l}, z(16+l))
		}
	}
	for s := range 4 {
		for l := range 4 {
			ctx.PREFETCHT1(Mem{Base: p[s], Index: dist, Scale: 1, Disp: 64 * l})
			acc := z(4*s + l)
			if r.chains {
				acc = z(s)
			}
			if !r.widen {
				ctx.VFMADD231PS(Mem{Base: p[s], Disp: 64 * l}, z(16+l), acc)
				continue
			}
			for h := range 2 {
				t := z(25 + s)
				ctx.VBROADCASTI32X8(Mem{Base: p[s], Disp: 64*l + 32*h}, t)
				ctx.VPSHUFB(z(24), t, t)
				ctx.VFMADD231PS(z(16+2*l+h), t, acc)
			}
		}
	}
	for s := range 4 {
		ctx.ADDQ(U32(256), p[s])
	}
	ctx.DECQ(cnt)
	ctx.JNZ(LabelRef(r.name + "_loop"))
	ctx.Label(r.name + "_done")
	finish(ctx)
}

// finish adds Z0-Z15 lane by lane into Z0 and stores it to out.
func finish(ctx *build.Context) {
	for n := 16; n > 1; n /= 2 {
		for i := range n / 2 {
			ctx.VADDPS(z(i+n/2), z(i), z(i))
		}
	}
	out := ctx.GP64()
	ctx.Load(ctx.Param("out"), out)
	ctx.VMOVUPS(z(0), Mem{Base: out})
	ctx.VZEROUPPER()
	ctx.RET()
}

// wAheadL1, where not 0, has ladderRowsT0 also prefetch each stream's
// line that far ahead into L1 (PREFETCHT0).
var wAheadL1 = 0

// orderStreams is how many streams ladderRows reads (ladderRowsS2: two,
// x's chunks loaded once for two lines).
var orderStreams = 4

// xAhead, where not 0, has ladderRowsP prefetch x's lines that far ahead
// into L1 (PREFETCHT0).
var xAhead = 0

// orderAhead is ladderOrder's prefetch distance, fwdRowLong's rowLongAhead.
const orderAhead = 1024

// order generates ladderOrder(w, stride, n, x, out): fwdRowLongBF16's
// inner loop (a group's, long0) run straight through: each step one line
// of each of the four streams (one base register, stride at scales 1 and
// 2 and three times it), each prefetched orderAhead bytes ahead into L2,
// x's two chunks for that line loaded and swapped once for the four, each
// stream one accumulator chain; n steps of 64 bytes a stream. What is
// left to fwdRowLong is its rows: a loop a row, x from the start of each,
// the tails, and a call and a reduction every four rows of each stream.
//
// With rows, ladderRows(w, stride, n, x, out, rows): the same loop a
// row, rows rows of n steps (n·32 columns) a stream, x from its start
// each row, the streams' rows one after the other in memory and the
// accumulators running on across them: fwdRowLong's row ends without its
// calls and reductions. With unroll above 1 (ladderRows<unroll>), a loop
// iteration is unroll steps (n a multiple of unroll): fewer loop branches
// a row.
//
// With xFixed (ladderRowsX), rows whose x does not walk: the same two
// chunks each step, as ladderOrder's; unrolled as well (ladderRows8X),
// x's 1 KiB of the iteration's eight steps, the same each iteration.
func order(ctx *build.Context, rows bool, unroll int, xFixed bool) {
	name, sig := "ladderOrder", "func(w *uint16, stride, n int, x *float32, out *[16]float32)"
	if rows {
		name, sig = "ladderRows", "func(w *uint16, stride, n int, x *float32, out *[16]float32, rows int)"
	}
	if unroll > 1 {
		name = fmt.Sprintf("%s%d", name, unroll)
	}
	if xFixed {
		name += "X"
	}
	if xAhead > 0 {
		name += "P"
	}
	if wAheadL1 > 0 {
		name += "T0"
	}
	if orderStreams != 4 {
		name += fmt.Sprintf("S%d", orderStreams)
	}
	asmout.Kernel(ctx, name, sig)
	pw, span, span3, n, x0, px := ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("w"), pw)
	ctx.Load(ctx.Param("stride"), span)
	ctx.LEAQ(Mem{Base: span, Index: span, Scale: 2}, span3)
	ctx.Load(ctx.Param("n"), n)
	ctx.Load(ctx.Param("x"), x0)
	for i := range 16 {
		ctx.VPXORD(z(i), z(i), z(i))
	}
	ctx.VMOVDQU32(widenCtl, z(21))
	at := func(s, disp int) Mem {
		m := Mem{Base: pw, Disp: disp}
		switch s {
		case 1, 2:
			m.Index, m.Scale = span, uint8(s)
		case 3:
			m.Index, m.Scale = span3, 1
		}
		return m
	}
	var left reg.GPVirtual
	if rows {
		left = ctx.GP64()
		ctx.Load(ctx.Param("rows"), left)
		ctx.TESTQ(left, left)
		ctx.JZ(LabelRef(name + "_done"))
		ctx.Label(name + "_row")
	}
	cnt := ctx.GP64()
	ctx.MOVQ(n, cnt)
	if unroll > 1 {
		ctx.SHRQ(U8(asmout.Log2(unroll)), cnt)
	}
	ctx.MOVQ(x0, px)
	ctx.TESTQ(cnt, cnt)
	ctx.JZ(LabelRef(name + "_next"))
	ctx.Label(name + "_loop")
	for u := range unroll {
		for s := range orderStreams { // fwdRowLong's constant displacement
			ctx.PREFETCHT1(at(s, orderAhead+64*u))
			if wAheadL1 > 0 {
				ctx.PREFETCHT0(at(s, wAheadL1+64*u))
			}
		}
		for c := range 2 {
			if xAhead > 0 {
				ctx.PREFETCHT0(Mem{Base: px, Disp: xAhead + 64*c + 128*u})
			}
			ctx.VMOVUPS(Mem{Base: px, Disp: 64*c + 128*u}, z(16))
			ctx.VSHUFF32X4(U8(0xD8), z(16), z(16), z(16))
			for s := range orderStreams {
				t := z(17 + s)
				ctx.VBROADCASTI32X8(at(s, 32*c+64*u), t)
				ctx.VPSHUFB(z(21), t, t)
				ctx.VFMADD231PS(z(16), t, z(s))
			}
		}
	}
	if rows && !xFixed {
		ctx.ADDQ(U32(128*unroll), px)
	}
	ctx.ADDQ(U32(64*unroll), pw)
	ctx.DECQ(cnt)
	ctx.JNZ(LabelRef(name + "_loop"))
	ctx.Label(name + "_next")
	if rows {
		ctx.DECQ(left)
		ctx.JNZ(LabelRef(name + "_row"))
	}
	ctx.Label(name + "_done")
	finish(ctx)
}

// pairs generates ladderPairs(w, stride, n, x, out, rows, rowBytes): rows
// two at a time in each of the four streams, each x chunk loaded once for
// eight lines (rows r and r+1 of each stream, rowBytes apart), n steps a
// row pair, each of the eight lines prefetched orderAhead ahead; rows (a
// multiple of two) rows a stream. Eight accumulators, one a row of the
// pair in each stream, run on across pairs.
func pairs(ctx *build.Context) {
	name := "ladderPairs"
	asmout.Kernel(ctx, name, "func(w *uint16, stride, n int, x *float32, out *[16]float32, rows, rowBytes int)")
	pw, span, span3, n, x0, px, rb := ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("w"), pw)
	ctx.Load(ctx.Param("stride"), span)
	ctx.LEAQ(Mem{Base: span, Index: span, Scale: 2}, span3)
	ctx.Load(ctx.Param("n"), n)
	ctx.Load(ctx.Param("x"), x0)
	ctx.Load(ctx.Param("rowBytes"), rb)
	for i := range 16 {
		ctx.VPXORD(z(i), z(i), z(i))
	}
	ctx.VMOVDQU32(widenCtl, z(21))
	p2 := ctx.GP64() // the pair's second rows
	at := func(base reg.GPVirtual, s, disp int) Mem {
		m := Mem{Base: base, Disp: disp}
		switch s {
		case 1, 2:
			m.Index, m.Scale = span, uint8(s)
		case 3:
			m.Index, m.Scale = span3, 1
		}
		return m
	}
	left := ctx.GP64()
	ctx.Load(ctx.Param("rows"), left)
	ctx.SHRQ(U8(1), left)
	ctx.TESTQ(left, left)
	ctx.JZ(LabelRef(name + "_done"))
	ctx.Label(name + "_row")
	cnt := ctx.GP64()
	ctx.MOVQ(n, cnt)
	ctx.MOVQ(x0, px)
	ctx.LEAQ(Mem{Base: pw, Index: rb, Scale: 1}, p2)
	ctx.Label(name + "_loop")
	for h, base := range []reg.GPVirtual{pw, p2} {
		_ = h
		for s := range 4 {
			ctx.PREFETCHT1(at(base, s, orderAhead))
		}
	}
	for c := range 2 {
		ctx.VMOVUPS(Mem{Base: px, Disp: 64 * c}, z(16))
		ctx.VSHUFF32X4(U8(0xD8), z(16), z(16), z(16))
		for h, base := range []reg.GPVirtual{pw, p2} {
			for s := range 4 {
				t := z(17 + s)
				ctx.VBROADCASTI32X8(at(base, s, 32*c), t)
				ctx.VPSHUFB(z(21), t, t)
				ctx.VFMADD231PS(z(16), t, z(4*h+s))
			}
		}
	}
	ctx.ADDQ(U32(128), px)
	ctx.ADDQ(U32(64), pw)
	ctx.ADDQ(U32(64), p2)
	ctx.DECQ(cnt)
	ctx.JNZ(LabelRef(name + "_loop"))
	ctx.ADDQ(rb, pw) // past the pair's second rows
	ctx.DECQ(left)
	ctx.JNZ(LabelRef(name + "_row"))
	ctx.Label(name + "_done")
	finish(ctx)
}

// blocked generates ladderBlocks(w, stride, x, out, sets, rowBytes, blocks,
// wrap, next): fwdRowLong's four rows of each of four streams (a set), the
// rows taken in column blocks of 512 (1 KiB of bfloat16, 2 KiB of x): for
// each block, rows 0-3 of the set in turn, so x's lines for a block are
// read four times close together instead of once a row. Each row's chunks
// still go in ascending order into its own accumulator (fwdRowLong's
// bits). A stream's next bytes are no longer its following bytes, so each
// line's prefetch goes to the same place in the run read next: the next
// row's block (rowBytes on), after row 3 the first row's next block (wrap
// bytes on) or, after the last block, the next set's first (next bytes
// on). sets sets, blocks blocks a row.
func blocked(ctx *build.Context) {
	name := "ladderBlocks"
	asmout.Kernel(ctx, name, "func(w *uint16, stride int, x *float32, out *[16]float32, sets, rowBytes, blocks, wrap, next int)")
	pw, span, span3, x0, px, rb, base := ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("w"), base)
	ctx.Load(ctx.Param("stride"), span)
	ctx.LEAQ(Mem{Base: span, Index: span, Scale: 2}, span3)
	ctx.Load(ctx.Param("x"), x0)
	ctx.Load(ctx.Param("rowBytes"), rb)
	for i := range 16 {
		ctx.VPXORD(z(i), z(i), z(i))
	}
	ctx.VMOVDQU32(widenCtl, z(21))
	pf := ctx.GP64()
	at := func(b reg.GPVirtual, s, disp int) Mem {
		m := Mem{Base: b, Disp: disp}
		switch s {
		case 1, 2:
			m.Index, m.Scale = span, uint8(s)
		case 3:
			m.Index, m.Scale = span3, 1
		}
		return m
	}
	sets, blk, cnt := ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("sets"), sets)
	ctx.TESTQ(sets, sets)
	ctx.JZ(LabelRef(name + "_done"))
	ctx.Label(name + "_set")
	ctx.Load(ctx.Param("blocks"), blk)
	ctx.MOVQ(x0, px)
	ctx.Label(name + "_block")
	for g := range 4 {
		// pw: row g's block; pf: the prefetch's offset from pw's line
		ctx.MOVQ(base, pw)
		for range g {
			ctx.ADDQ(rb, pw)
		}
		switch {
		case g < 3:
			ctx.MOVQ(rb, pf)
		default:
			ctx.Load(ctx.Param("wrap"), pf)
			ctx.CMPQ(blk, U8(1))
			ctx.JNE(LabelRef(fmt.Sprintf("%s_pf%d", name, g)))
			ctx.Load(ctx.Param("next"), pf)
			ctx.Label(fmt.Sprintf("%s_pf%d", name, g))
		}
		ctx.ADDQ(pw, pf)
		ctx.MOVQ(U32(16), cnt)
		ctx.Label(fmt.Sprintf("%s_loop%d", name, g))
		for s := range 4 {
			ctx.PREFETCHT1(at(pf, s, 0))
		}
		for c := range 2 {
			ctx.VMOVUPS(Mem{Base: px, Disp: 64 * c}, z(16))
			ctx.VSHUFF32X4(U8(0xD8), z(16), z(16), z(16))
			for s := range 4 {
				t := z(17 + s)
				ctx.VBROADCASTI32X8(at(pw, s, 32*c), t)
				ctx.VPSHUFB(z(21), t, t)
				ctx.VFMADD231PS(z(16), t, z(4*g+s))
			}
		}
		ctx.ADDQ(U32(128), px)
		ctx.ADDQ(U32(64), pw)
		ctx.ADDQ(U32(64), pf)
		ctx.DECQ(cnt)
		ctx.JNZ(LabelRef(fmt.Sprintf("%s_loop%d", name, g)))
		if g < 3 {
			ctx.SUBQ(U32(2048), px) // the block's x again for the next row
		}
	}
	ctx.ADDQ(U32(1024), base) // the next block
	ctx.DECQ(blk)
	ctx.JNZ(LabelRef(name + "_block"))
	// base is past row 0 of the set: on to row 4
	ctx.SUBQ(rb, base)
	ctx.LEAQ(Mem{Base: base, Index: rb, Scale: 4}, base)
	ctx.DECQ(sets)
	ctx.JNZ(LabelRef(name + "_set"))
	ctx.Label(name + "_done")
	finish(ctx)
}
