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
	xAhead = 512
	order(ctx, true, 1, false)
	xAhead = 0
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
// chunks each step, as ladderOrder's.
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
		for s := range 4 { // fwdRowLong's constant displacement
			ctx.PREFETCHT1(at(s, orderAhead+64*u))
		}
		for c := range 2 {
			if xAhead > 0 {
				ctx.PREFETCHT0(Mem{Base: px, Disp: xAhead + 64*c + 128*u})
			}
			ctx.VMOVUPS(Mem{Base: px, Disp: 64*c + 128*u}, z(16))
			ctx.VSHUFF32X4(U8(0xD8), z(16), z(16), z(16))
			for s := range 4 {
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
