package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// rowDotsMax is the most queries attnRowDots scores at once (query heads
// sharing a KV head: Qwen3's and Llama's groups are 1-8).
const rowDotsMax = 4

var ymms = []reg.VecPhysical{reg.Y0, reg.Y1, reg.Y2, reg.Y3, reg.Y4, reg.Y5, reg.Y6, reg.Y7, reg.Y8, reg.Y9,
	reg.Y10, reg.Y11, reg.Y12, reg.Y13, reg.Y14, reg.Y15, reg.Y16, reg.Y17, reg.Y18, reg.Y19, reg.Y20,
	reg.Y21, reg.Y22, reg.Y23, reg.Y24, reg.Y25, reg.Y26, reg.Y27, reg.Y28, reg.Y29, reg.Y30, reg.Y31}

var xmms = []reg.VecPhysical{reg.X0, reg.X1, reg.X2, reg.X3, reg.X4, reg.X5, reg.X6, reg.X7, reg.X8, reg.X9,
	reg.X10, reg.X11, reg.X12, reg.X13, reg.X14, reg.X15}

// rowDotsAhead is how many keys ahead attnRowDots prefetches keys and
// values into L2 (PREFETCHT1), and how many of each it prefetches before
// its first block. A decoding row's cache comes cold from memory (the
// layer's weights streamed through L2 and L3 since the last token), in
// 4 KiB pages that each hold one position's keys of every head, so the
// hardware prefetchers, which stay within a page, fetch nothing ahead of
// a head's strided keys.
const rowDotsAhead = 16

// rowDots emits attnRowDots<r>: a lone decoding row's scores, r query
// heads against n cached keys read in place (no transposed tile: a
// decoding row reads each key once per group, so packing one would cost
// as much as scoring it). Each score keeps attnDot's eight lanes in one
// 256-bit accumulator (lane l adds elements i ≡ l mod 8, ascending, one
// fused multiply-add each, from +0), and four keys' trees come out of two
// rounds of VHADDPS and one add of the halves, attnDotsVec's instructions
// and order. Arguments: d (query g's score of key t at d + g·ld + 4t
// bytes; the scores go out four keys at a time, so up to three past n are
// written and are not scores), q (query g at q + g·qs bytes), k (key t at
// k + t·stride bytes), v (value t at v + t·stride bytes: only
// prefetched, for the weighted sums after), hd (a multiple of 16), n ≥ 1.
// Keys go eight at a time while eight are left and r ≤ 2 (sixteen
// accumulators: VHADDPS and VEXTRACTF128 have only VEX forms, so the
// trees stay in Y0-Y15), then four; a last group of one to three repeats
// its last key (the repeats' scores land in the padding). Each pass does
// two chunks of eight elements (a 64-byte line of each key) and
// prefetches that line of the keys and values rowDotsAhead on. d and n
// live in the argument frame (ADDQ and SUBQ to memory): the loop holds
// twelve pointers and strides. Accumulators Y0-Y15 (key j, query g:
// Y(r·j+g)), queries Y16-Y19, keys Y20-Y27.
func rowDots(ctx *build.Context, r int) {
	name := fmt.Sprintf("attnRowDots%d", r)
	asmout.Kernel(ctx, name, "func(d *float32, ld uintptr, q *float32, qs uintptr, k *float32, v *float32, stride uintptr, hd int, n int)")
	ctx.Doc(fmt.Sprintf("%s stores %d queries' scores against n keys in place, four keys at a time (up to three scores past n are padding), prefetching keys and values ahead.", name, r))
	acc := func(j, g int) reg.VecPhysical { return ymms[r*j+g] }
	dMem, nMem := paramAddr(ctx, "d"), paramAddr(ctx, "n")
	k := ctx.Load(ctx.Param("k"), ctx.GP64())
	vk := ctx.Load(ctx.Param("v"), ctx.GP64())
	ctx.SUBQ(k, vk) // values at keys' addresses + vk
	ctx.Store(vk, ctx.Param("v"))
	s1 := ctx.Load(ctx.Param("stride"), ctx.GP64())
	qs := ctx.Load(ctx.Param("qs"), ctx.GP64())
	s3 := ctx.GP64()
	ctx.LEAQ(operand.Mem{Base: s1, Index: s1, Scale: 2}, s3)
	var qs3 reg.GPVirtual
	if r == 4 {
		qs3 = ctx.GP64()
		ctx.LEAQ(operand.Mem{Base: qs, Index: qs, Scale: 2}, qs3)
	}
	// The prologue: the first min(n, rowDotsAhead) keys and values.
	{
		rows := ctx.Load(ctx.Param("n"), ctx.GP64())
		lim := ctx.GP64()
		ctx.MOVQ(operand.U32(rowDotsAhead), lim)
		ctx.CMPQ(rows, lim)
		ctx.CMOVQGT(lim, rows)
		rp := ctx.GP64()
		ctx.MOVQ(k, rp)
		ctx.Label("pre")
		e, end := ctx.GP64(), ctx.Load(ctx.Param("hd"), ctx.GP64())
		ctx.SHLQ(operand.U8(2), end)
		ctx.XORQ(e, e)
		ctx.Label("preline")
		ctx.PREFETCHT1(operand.Mem{Base: rp, Index: e, Scale: 1})
		lp := ctx.GP64()
		ctx.LEAQ(operand.Mem{Base: rp, Index: vk, Scale: 1}, lp)
		ctx.PREFETCHT1(operand.Mem{Base: lp, Index: e, Scale: 1})
		ctx.ADDQ(operand.U8(64), e)
		ctx.CMPQ(e, end)
		ctx.JB(operand.LabelRef("preline"))
		ctx.ADDQ(s1, rp)
		ctx.DECQ(rows)
		ctx.JNZ(operand.LabelRef("pre"))
	}
	qmem := func(qp reg.Register, g, disp int) operand.Mem {
		switch g {
		case 0:
			return operand.Mem{Base: qp, Disp: disp}
		case 3:
			return operand.Mem{Base: qp, Index: qs3, Scale: 1, Disp: disp}
		}
		return operand.Mem{Base: qp, Index: qs, Scale: uint8(g), Disp: disp}
	}
	// block emits one block of nk keys (4 or 8) whose key j is at
	// key(j) (base and index registers, the element offset advancing
	// through the bases), and stores its scores; ahead(j) is key j's
	// address rowDotsAhead keys on, through the bases in pf.
	block := func(label string, nk int, bases []reg.GPVirtual, key, aheadK, aheadV func(j int) operand.Mem) {
		for j := range nk {
			for g := range r {
				ctx.VPXORD(acc(j, g), acc(j, g), acc(j, g))
			}
		}
		qp := ctx.Load(ctx.Param("q"), ctx.GP64())
		end := ctx.Load(ctx.Param("hd"), ctx.GP64())
		ctx.SHLQ(operand.U8(2), end)
		ctx.ADDQ(qp, end) // the queries' first element past the head
		ctx.Label(label)
		for half := range 2 {
			for g := range r {
				ctx.VMOVUPS(qmem(qp, g, 32*half), ymms[16+g])
			}
			for j := range nk {
				kv := ymms[20+j]
				m := key(j)
				m.Disp += 32 * half
				ctx.VMOVUPS(m, kv)
				for g := range r {
					ctx.VFMADD231PS(ymms[16+g], kv, acc(j, g))
				}
				if half == 0 {
					ctx.PREFETCHT1(aheadK(j))
				} else {
					ctx.PREFETCHT1(aheadV(j))
				}
			}
		}
		for _, b := range bases {
			ctx.ADDQ(operand.U8(64), b)
		}
		ctx.ADDQ(operand.U8(64), qp)
		ctx.CMPQ(qp, end)
		ctx.JB(operand.LabelRef(label))
		ld := ctx.Load(ctx.Param("ld"), ctx.GP64())
		dp := ctx.Load(ctx.Param("d"), ctx.GP64())
		for g := range r {
			if g > 0 {
				ctx.ADDQ(ld, dp)
			}
			for j0 := 0; j0 < nk; j0 += 4 {
				a0, a1, a2, a3 := acc(j0, g), acc(j0+1, g), acc(j0+2, g), acc(j0+3, g)
				ctx.VHADDPS(a1, a0, a0)
				ctx.VHADDPS(a3, a2, a2)
				ctx.VHADDPS(a2, a0, a0)
				x0, x1 := xmms[r*j0+g], xmms[r*(j0+1)+g]
				ctx.VEXTRACTF128(operand.U8(1), a0, x1)
				ctx.VADDPS(x1, x0, x0)
				ctx.VMOVUPS(x0, operand.Mem{Base: dp, Disp: 4 * j0})
			}
		}
		ctx.ADDQ(operand.U8(4*uint8(nk)), dMem)
	}
	if r <= 2 {
		ctx.Label("eights")
		ctx.CMPQ(nMem, operand.U8(8))
		ctx.JB(operand.LabelRef("fours"))
		p, p4 := ctx.GP64(), ctx.GP64()
		ctx.MOVQ(k, p)
		ctx.LEAQ(operand.Mem{Base: k, Index: s1, Scale: 4}, p4)
		pf, pf4 := ctx.GP64(), ctx.GP64()
		ctx.MOVQ(s1, pf)
		ctx.SHLQ(operand.U8(4), pf) // rowDotsAhead keys
		ctx.ADDQ(k, pf)
		ctx.LEAQ(operand.Mem{Base: pf, Index: s1, Scale: 4}, pf4)
		vd := ctx.Load(ctx.Param("v"), ctx.GP64())
		pv, pv4 := ctx.GP64(), ctx.GP64()
		ctx.LEAQ(operand.Mem{Base: pf, Index: vd, Scale: 1}, pv)
		ctx.LEAQ(operand.Mem{Base: pf4, Index: vd, Scale: 1}, pv4)
		at := func(p, p4 reg.GPVirtual, j int) operand.Mem {
			b := p
			if j >= 4 {
				b = p4
			}
			switch j % 4 {
			case 0:
				return operand.Mem{Base: b}
			case 3:
				return operand.Mem{Base: b, Index: s3, Scale: 1}
			}
			return operand.Mem{Base: b, Index: s1, Scale: uint8(j % 4)}
		}
		block("eight", 8, []reg.GPVirtual{p, p4, pf, pf4, pv, pv4},
			func(j int) operand.Mem { return at(p, p4, j) },
			func(j int) operand.Mem { return at(pf, pf4, j) },
			func(j int) operand.Mem { return at(pv, pv4, j) })
		ctx.LEAQ(operand.Mem{Base: k, Index: s1, Scale: 8}, k)
		ctx.SUBQ(operand.U8(8), nMem)
		ctx.JMP(operand.LabelRef("eights"))
	}
	ctx.Label("fours")
	ctx.CMPQ(nMem, operand.U8(0))
	ctx.JLE(operand.LabelRef("done"))
	// Keys 1-3 of the group at offsets min(j·stride, (n−1)·stride): a
	// short last group repeats its last key.
	lastOff := ctx.Load(ctx.Param("n"), ctx.GP64())
	ctx.DECQ(lastOff)
	ctx.IMULQ(s1, lastOff)
	o := []reg.GPVirtual{ctx.GP64(), ctx.GP64(), ctx.GP64()}
	ctx.MOVQ(s1, o[0])
	ctx.LEAQ(operand.Mem{Base: s1, Index: s1, Scale: 1}, o[1])
	ctx.LEAQ(operand.Mem{Base: s1, Index: s1, Scale: 2}, o[2])
	for _, x := range o {
		ctx.CMPQ(x, lastOff)
		ctx.CMOVQGT(lastOff, x)
	}
	p, pf := ctx.GP64(), ctx.GP64()
	ctx.MOVQ(k, p)
	ctx.MOVQ(s1, pf)
	ctx.SHLQ(operand.U8(4), pf) // rowDotsAhead keys
	ctx.ADDQ(k, pf)
	pv := ctx.GP64()
	ctx.MOVQ(paramAddr(ctx, "v"), pv)
	ctx.ADDQ(pf, pv)
	at := func(p reg.GPVirtual, j int) operand.Mem {
		if j == 0 {
			return operand.Mem{Base: p}
		}
		return operand.Mem{Base: p, Index: o[j-1], Scale: 1}
	}
	block("four", 4, []reg.GPVirtual{p, pf, pv},
		func(j int) operand.Mem { return at(p, j) },
		func(j int) operand.Mem { return at(pf, j) },
		func(j int) operand.Mem { return at(pv, j) })
	ctx.LEAQ(operand.Mem{Base: k, Index: s1, Scale: 4}, k)
	ctx.SUBQ(operand.U8(4), nMem)
	ctx.JMP(operand.LabelRef("fours"))
	ctx.Label("done")
	ctx.VZEROUPPER()
	ctx.RET()
}

// tileWMax is the most rows an attnTileW tile takes: 16 accumulators.
const tileWMax = 2

// tileW emits attnTileW<r>: attnTileZ's sums over 128 columns (eight
// vectors) at once, for a lone decoding row's weighted sums of the
// values: each value row (a head of 128) is read once for the group's
// rows instead of once per 64-column strip. Arguments and order as
// attnTileZ's. Accumulators Z0-Z15 (row i, vector j: Z(8i+j)), B's
// vectors Z16-Z23, the broadcast A[i][p] Z24-Z25.
//
// With prefetch it emits attnTileWP<r> instead: the value rows
// prefetched tileWAhead rows ahead, and the first tileWAhead before the
// loop. At long positions a head's values no longer stay in L2 from
// attnRowDots' prefetches until the sums read them (2,048 positions: 1
// MiB of keys and as much of values a head), and without prefetches the
// sums waited on each value row from memory (a row is in a 4 KiB page of
// its own, so the hardware prefetchers fetch nothing ahead). The
// prefetches change no result.
func tileW(ctx *build.Context, r int, prefetch bool) {
	name, doc := fmt.Sprintf("attnTileW%d", r), ""
	if prefetch {
		name, doc = fmt.Sprintf("attnTileWP%d", r), ", prefetching B's rows ahead"
	}
	asmout.Kernel(ctx, name, "func(c *float32, ldc uintptr, a *float32, lda uintptr, ldp uintptr, b *float32, ldb uintptr, k int)")
	ctx.Doc(fmt.Sprintf("%s adds %d rows of Σ_p A[i][p]·B[p][:128] to C, p ascending%s.", name, r, doc))
	z := asmout.ZMM
	k := ctx.Load(ctx.Param("k"), ctx.GP64())
	ctx.TESTQ(k, k)
	ctx.JZ(operand.LabelRef("none"))
	moveC(ctx, r, 8, true)
	ap, b, ldb, ldp, off := tileArgs(ctx, r)
	var pf reg.Register
	if prefetch {
		pf = tileWPrologue(ctx, b, ldb, k)
	}
	ctx.Label("loop")
	for i := range r {
		ctx.VBROADCASTSS(operand.Mem{Base: ap[i], Index: off, Scale: 1}, z(24+i))
	}
	for j := range 8 {
		if prefetch {
			ctx.PREFETCHT1(operand.Mem{Base: pf, Disp: 64 * j})
		}
		ctx.VMOVUPS(operand.Mem{Base: b, Disp: 64 * j}, z(16+j))
		for i := range r {
			ctx.VFMADD231PS(z(16+j), z(24+i), z(8*i+j))
		}
	}
	ctx.ADDQ(ldp, off)
	ctx.ADDQ(ldb, b)
	if prefetch {
		ctx.ADDQ(ldb, pf)
	}
	ctx.DECQ(k)
	ctx.JNZ(operand.LabelRef("loop"))
	moveC(ctx, r, 8, false)
	ctx.VZEROUPPER()
	ctx.Label("none")
	ctx.RET()
}

// tileWAhead is how many value rows ahead attnTileWP prefetches (into
// L2, as attnRowDots does the keys).
const tileWAhead = 16

// tileWPrologue prefetches the first min(k, tileWAhead) rows from b and
// returns the register that points tileWAhead rows on from b.
func tileWPrologue(ctx *build.Context, b, ldb, k reg.Register) reg.Register {
	pf, lim := ctx.GP64(), ctx.GP64()
	ctx.MOVQ(b, pf)
	ctx.MOVQ(operand.U32(tileWAhead), lim)
	ctx.CMPQ(k, lim)
	ctx.CMOVQLT(k, lim)
	ctx.Label("pro")
	for j := range 8 {
		ctx.PREFETCHT1(operand.Mem{Base: pf, Disp: 64 * j})
	}
	ctx.ADDQ(ldb, pf)
	ctx.DECQ(lim)
	ctx.JNZ(operand.LabelRef("pro"))
	ctx.MOVQ(ldb, pf)
	ctx.SHLQ(operand.U8(4), pf) // tileWAhead rows
	ctx.ADDQ(b, pf)
	return pf
}

// paramAddr is the argument frame slot of the named parameter (a
// pointer-sized one), for a kernel that keeps a counter there.
func paramAddr(ctx *build.Context, name string) operand.Mem {
	b, err := ctx.Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}
