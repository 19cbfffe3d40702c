package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// ymm is Y0..Y15 by number.
func ymm(i int) reg.VecPhysical {
	return []reg.VecPhysical{
		reg.Y0, reg.Y1, reg.Y2, reg.Y3, reg.Y4, reg.Y5, reg.Y6, reg.Y7,
		reg.Y8, reg.Y9, reg.Y10, reg.Y11, reg.Y12, reg.Y13, reg.Y14, reg.Y15,
	}[i]
}

// weights is the weight element type, with this generator's loads; ctl
// is the widening shuffle's control operand (widenTable, or a register a
// kernel loaded it into).
type weights struct {
	asmout.Weights
	ctl Op
}

func weightsOf(bf bool) weights { return weights{asmout.WeightsOf(bf), widenTable} }

// load puts the 8 weights of half h (lanes 8h..8h+7) of the 16-column
// chunk at m into y as float32: bfloat16 bits are widened exactly, each
// placed in the upper half of a zeroed 32-bit lane. That takes a
// broadcast load of the 8 halves into both 128-bit lanes and one byte
// shuffle (widenBF16Table), not a zero-extension and a shift: the shift
// would run on the ports of the multiplies and adds (Intel's 0 and 1),
// the shuffle runs beside them.
func (w weights) load(ctx *build.Context, m Mem, h int, y reg.VecPhysical) {
	m.Disp += 8 * w.Size * h
	if !w.BF {
		ctx.VMOVUPS(m, y)
		return
	}
	ctx.VBROADCASTI128(m, y)
	ctx.VPSHUFB(w.ctl, y, y)
}

// widenTable is the VPSHUFB control of load: lane i < 4 of the low
// 128 bits takes bytes 2i and 2i+1 (bfloat16 i) into its upper half, lane
// i of the high 128 bits bfloat16 4+i; 0x80 zeroes a byte.
var widenTable Mem

// widenBF16Table emits widenTable's data.
func widenBF16Table(ctx *build.Context) {
	widenTable = ctx.StaticGlobal("widenBF16Ctl")
	ctx.DataAttributes(attr.RODATA | attr.NOPTR)
	for i := range 8 {
		lo := 2*(i%4) + 8*(i/4)
		ctx.AddDatum(4*i, U32(0x8080|lo<<16|(lo+1)<<24))
	}
}

// tailWeights loads half h of a row of the tail panel: the last n mod 16
// columns of a row, widened to float32 and zero-padded to 16 by the
// caller, so no load reads past the matrix (AVX2 has no 16-bit masked
// load).
func tailWeights(ctx *build.Context, m Mem, h int, y reg.VecPhysical) {
	m.Disp += 32 * h
	ctx.VMOVUPS(m, y)
}

// perm is where the reduction leaves its inputs: lane q of reduce8's
// result holds the sum of input perm[q], so output p goes into slot
// perm[p].
var perm = [8]int{0, 2, 4, 6, 1, 3, 5, 7}

// reduce8 finishes the lane tree of eight outputs whose level-1 sums
// (lane i + lane i+8) are in v: level 2 pairs each vector's 128-bit halves
// (i + i+4), levels 3 and 4 the elements of a half (i + i+2, then i + i+1),
// each level packing two vectors' results into one. s0 and s1 are scratch;
// the v registers are overwritten, the result is returned.
func reduce8(ctx *build.Context, v [8]reg.VecPhysical, s0, s1 reg.VecPhysical) reg.VecPhysical {
	level := func(n int, shuf func(imm uint8, b, a, dst reg.VecPhysical), immLo, immHi uint8) {
		for j := range n {
			a, b := v[2*j], v[2*j+1]
			shuf(immLo, b, a, s0)
			shuf(immHi, b, a, s1)
			ctx.VADDPS(s1, s0, a)
			v[j] = a
		}
	}
	lanes := func(imm uint8, b, a, dst reg.VecPhysical) { ctx.VPERM2F128(U8(imm), b, a, dst) }
	elems := func(imm uint8, b, a, dst reg.VecPhysical) { ctx.VSHUFPS(U8(imm), b, a, dst) }
	level(4, lanes, 0x20, 0x31)
	level(2, elems, 0x44, 0xee)
	level(1, elems, 0x88, 0xdd)
	return v[0]
}

// tile2x3 generates fwd2Tile2x3<F32|BF16>(xp, w, stride, chunks, tiles,
// tail, out): for each of tiles consecutive 3-row tiles i (rows
// 3i..3i+2 from w, stride elements apart), out[8i+3t+r] = Σ_k
// x_t[k]·w[(3i+r)·stride+k] for the two tokens t and rows r, over chunks
// 16-column chunks of w and, when tail is not nil, a last chunk whose
// weights come from tail (16 float32 per row, 3 rows per tile). The tokens
// come packed as packTokens leaves them (a chunk of token t at xp+64t
// bytes, 256 bytes a chunk: this kernel takes two of a group's four),
// zero past the columns. Accumulator Y(2p+h) holds half h of output
// p = 3t+r; x halves are in Y12 and Y13, the weights in Y14, each product
// fused into its add (VFMADD231PS, FMA3). With ctlReg (bfloat16 only,
// name suffix Reg) the widening control sits in Y15, the one register
// free, instead of being read from memory by every shuffle: the 6
// shuffles per 12 FMAs then add no loads to the 10 the tile already
// issues.
func tile2x3(ctx *build.Context, bf, ctlReg bool) {
	w := weightsOf(bf)
	name := "fwd2Tile2x3" + w.Suffix
	if ctlReg {
		name += "Reg"
	}
	asmout.Kernel(ctx, name, fmt.Sprintf("func(xp *float32, w %s, stride, chunks, tiles int, tail *float32, out *float32)", w.GoType))
	xp0, row, stride, chunks := ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("xp"), xp0)
	ctx.Load(ctx.Param("w"), row)
	ctx.Load(ctx.Param("stride"), stride)
	ctx.SHLQ(U8(asmout.Log2(w.Size)), stride)
	ctx.Load(ctx.Param("chunks"), chunks)
	tiles, tail, out := ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("tiles"), tiles)
	ctx.Load(ctx.Param("tail"), tail)
	ctx.Load(ctx.Param("out"), out)
	if ctlReg {
		ctx.VMOVDQU(widenTable, reg.Y15)
		w.ctl = reg.Y15
	}
	px, pw, left := ctx.GP64(), ctx.GP64(), ctx.GP64()
	rowMem := func(r int) Mem {
		if r == 0 {
			return Mem{Base: pw}
		}
		return Mem{Base: pw, Index: stride, Scale: uint8(r)}
	}
	dx := 0
	step := func(load func(r, h int, y reg.VecPhysical)) {
		for h := range 2 {
			for t := range 2 {
				ctx.VMOVUPS(Mem{Base: px, Disp: dx + 64*t + 32*h}, ymm(12+t))
			}
			for r := range 3 {
				load(r, h, reg.Y14)
				for t := range 2 {
					acc := ymm(2*(3*t+r) + h)
					ctx.VFMADD231PS(ymm(12+t), reg.Y14, acc)
				}
			}
		}
	}
	ctx.Label("tile")
	ctx.MOVQ(xp0, px)
	ctx.MOVQ(row, pw)
	ctx.MOVQ(chunks, left)
	for a := range 12 {
		ctx.VXORPS(ymm(a), ymm(a), ymm(a))
	}
	wload := func(r, h int, y reg.VecPhysical) {
		m := rowMem(r)
		m.Disp += dx / 256 * 16 * w.Size
		w.load(ctx, m, h, y)
	}
	// Two chunks per iteration (measured 2-20% faster for float32 on
	// Zen 4, where the loop's own instructions compete with the 24
	// vector ones), then the odd one.
	ctx.SHRQ(U8(1), left)
	ctx.JZ(LabelRef("odd"))
	ctx.Label("loop")
	step(wload)
	dx = 256
	step(wload)
	dx = 0
	ctx.ADDQ(U32(512), px)
	ctx.ADDQ(U8(32*w.Size), pw)
	ctx.DECQ(left)
	ctx.JNZ(LabelRef("loop"))
	ctx.Label("odd")
	ctx.TESTQ(U32(1), chunks)
	ctx.JZ(LabelRef("tail"))
	step(wload)
	ctx.ADDQ(U32(256), px)
	ctx.ADDQ(U8(16*w.Size), pw)
	ctx.Label("tail")
	ctx.TESTQ(tail, tail)
	ctx.JZ(LabelRef("done"))
	step(func(r, h int, y reg.VecPhysical) { tailWeights(ctx, Mem{Base: tail, Disp: 64 * r}, h, y) })
	ctx.ADDQ(U8(3*64), tail)
	ctx.Label("done")
	var v [8]reg.VecPhysical
	for p := range 6 {
		ctx.VADDPS(ymm(2*p+1), ymm(2*p), ymm(2*p))
		v[perm[p]] = ymm(2 * p)
	}
	v[perm[6]], v[perm[7]] = reg.Y1, reg.Y3
	ctx.VXORPS(reg.Y1, reg.Y1, reg.Y1)
	ctx.VXORPS(reg.Y3, reg.Y3, reg.Y3)
	ctx.VMOVUPS(reduce8(ctx, v, reg.Y5, reg.Y7), Mem{Base: out})
	ctx.LEAQ(Mem{Base: row, Index: stride, Scale: 2}, row)
	ctx.ADDQ(stride, row)
	ctx.ADDQ(U8(32), out)
	ctx.DECQ(tiles)
	ctx.JNZ(LabelRef("tile"))
	ctx.VZEROUPPER()
	ctx.RET()
}

// row8 generates fwd2Row8<F32|BF16>(x, xstride, w, stride, chunks, rows,
// tail, out): out[r] = Σ_k x[k]·w[r·stride+k] for rows r < rows (1 to 8),
// over chunks 16-column chunks (x's chunks xstride bytes apart: 64 for a
// plain vector, 256 for a token of a packed group) and, when tail is not
// nil, a last chunk of x (zero past the columns) whose weights come from
// tail (16 float32 per row); out[r] for r ≥ rows is 0. The rows are read
// one after another, start to end, so decoding streams the weights in
// address order, as the AVX-512 fwdRow16 does; a row's two add chains (one
// per half) still outrun memory. Each step prefetches into L2 the line the
// next row reads at the same column (for the last row, whatever follows):
// a row of 1024 float32 is a page, where the hardware prefetcher stops and
// has to find the next row's stream again. Row r's halves accumulate in Y8 and Y9
// and its level-1 sum goes to Y(perm[r]), so the result is in row order.
func row8(ctx *build.Context, bf bool) {
	w := weightsOf(bf)
	asmout.Kernel(ctx, "fwd2Row8"+w.Suffix, fmt.Sprintf("func(x *float32, xstride int, w %s, stride, chunks, rows int, tail *float32, out *[8]float32)", w.GoType))
	x0, xstride, base, stride := ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("x"), x0)
	ctx.Load(ctx.Param("xstride"), xstride)
	ctx.Load(ctx.Param("w"), base)
	ctx.Load(ctx.Param("stride"), stride)
	ctx.SHLQ(U8(asmout.Log2(w.Size)), stride)
	chunks, rows, tail := ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("chunks"), chunks)
	ctx.Load(ctx.Param("rows"), rows)
	ctx.Load(ctx.Param("tail"), tail)
	for a := range 8 {
		ctx.VXORPS(ymm(a), ymm(a), ymm(a))
	}
	px, pw, cnt := ctx.GP64(), ctx.GP64(), ctx.GP64()
	step := func(load func(h int, y reg.VecPhysical)) {
		for h := range 2 {
			wv, acc := ymm(10+3*h), ymm(8+h)
			load(h, wv)
			ctx.VFMADD231PS(Mem{Base: px, Disp: 32 * h}, wv, acc)
		}
	}
	for r := range 8 {
		loop, rest, sum := fmt.Sprintf("row%d", r), fmt.Sprintf("tail%d", r), fmt.Sprintf("sum%d", r)
		ctx.MOVQ(x0, px)
		ctx.MOVQ(base, pw)
		ctx.MOVQ(chunks, cnt)
		ctx.VXORPS(reg.Y8, reg.Y8, reg.Y8)
		ctx.VXORPS(reg.Y9, reg.Y9, reg.Y9)
		ctx.TESTQ(cnt, cnt)
		ctx.JZ(LabelRef(rest))
		ctx.Label(loop)
		ctx.PREFETCHT1(Mem{Base: pw, Index: stride, Scale: 1})
		step(func(h int, y reg.VecPhysical) { w.load(ctx, Mem{Base: pw}, h, y) })
		ctx.ADDQ(xstride, px)
		ctx.ADDQ(U8(16*w.Size), pw)
		ctx.DECQ(cnt)
		ctx.JNZ(LabelRef(loop))
		ctx.Label(rest)
		ctx.TESTQ(tail, tail)
		ctx.JZ(LabelRef(sum))
		step(func(h int, y reg.VecPhysical) { tailWeights(ctx, Mem{Base: tail, Disp: 64 * r}, h, y) })
		ctx.Label(sum)
		ctx.VADDPS(reg.Y9, reg.Y8, ymm(perm[r]))
		if r < 7 {
			ctx.ADDQ(stride, base)
			ctx.DECQ(rows)
			ctx.JZ(LabelRef("reduce"))
		}
	}
	ctx.Label("reduce")
	var v [8]reg.VecPhysical
	for q := range v {
		v[q] = ymm(q)
	}
	res := reduce8(ctx, v, reg.Y8, reg.Y9)
	out := ctx.GP64()
	ctx.Load(ctx.Param("out"), out)
	ctx.VMOVUPS(res, Mem{Base: out})
	ctx.VZEROUPPER()
	ctx.RET()
}

// tile4x3 generates fwd2Tile4x3<F32|BF16>(xp, w, stride, chunks, tiles,
// tail, out, scratch, block): tile2x3's sums for all four tokens of a
// packed group, out[16i+3t+r] for token t and row r of tile i, continuing
// the sums scratch holds. A weight vector meets four tokens, so the tile
// reads half the weights per multiply-add that tile2x3 reads from L2;
// with 12 accumulators that means one 8-lane half at a time. Tile i's 24
// accumulators (half h of output p at vector 12h+p) live in scratch
// between calls, 768 bytes a tile, so that a caller can split the columns
// into pieces whose packed group stays in L1 (zeroed scratch before the
// first, tail only with the last). Within a call the columns go in blocks
// of block chunks: half 0 and then half 1 take their accumulators from
// scratch, run the block's chunks and put them back, so the second half
// finds the block's weights and tokens in L1. Each lane still adds its
// products in ascending k, one FMA each (a store and a load leave the sum
// as it is), and the end adds the two halves and runs the lane tree as
// tile2x3 does: the same bits. Accumulator Y(3t+r), weights Y12-Y14 (row
// r in Y(12+r)), tokens Y15; bfloat16 weights widen by a zero-extension
// and a shift.
func tile4x3(ctx *build.Context, bf bool) {
	w := weightsOf(bf)
	asmout.Kernel(ctx, "fwd2Tile4x3"+w.Suffix, fmt.Sprintf("func(xp *float32, w %s, stride, chunks, tiles int, tail *float32, out *float32, scratch *float32, block int)", w.GoType))
	chunkShift := U8(asmout.Log2(16 * w.Size))
	xScale := uint8(256 / (16 * w.Size))
	xp0, row, stride, scratch := ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("xp"), xp0)
	ctx.Load(ctx.Param("w"), row)
	ctx.Load(ctx.Param("stride"), stride)
	ctx.SHLQ(U8(asmout.Log2(w.Size)), stride)
	ctx.Load(ctx.Param("scratch"), scratch)
	lim := ctx.GP64()
	ctx.Load(ctx.Param("chunks"), lim)
	ctx.SHLQ(chunkShift, lim)
	ctx.Label("tile")
	rows := asmout.Pointers(ctx, row, stride, 3)
	wi0, wend, wi := ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.XORQ(wi0, wi0)
	ctx.Label("block")
	ctx.Load(ctx.Param("block"), wend)
	ctx.SHLQ(chunkShift, wend)
	ctx.ADDQ(wi0, wend)
	ctx.CMPQ(wend, lim)
	ctx.CMOVQGT(lim, wend)
	step := func(h int, wload func(r int, y reg.VecPhysical)) {
		for r := range 3 {
			wload(r, ymm(12+r))
		}
		for t := range 4 {
			ctx.VMOVUPS(Mem{Base: xp0, Index: wi, Scale: xScale, Disp: 64*t + 32*h}, reg.Y15)
			for r := range 3 {
				ctx.VFMADD231PS(reg.Y15, ymm(12+r), ymm(3*t+r))
			}
		}
	}
	for h := range 2 {
		loop, done, store := fmt.Sprintf("loop%d", h), fmt.Sprintf("done%d", h), fmt.Sprintf("store%d", h)
		for a := range 12 {
			ctx.VMOVUPS(Mem{Base: scratch, Disp: 384*h + 32*a}, ymm(a))
		}
		ctx.MOVQ(wi0, wi)
		ctx.CMPQ(wi, wend)
		ctx.JGE(LabelRef(done))
		ctx.Label(loop)
		step(h, func(r int, y reg.VecPhysical) {
			m := Mem{Base: rows[r], Index: wi, Scale: 1, Disp: 8 * w.Size * h}
			if !w.BF {
				ctx.VMOVUPS(m, y)
				return
			}
			ctx.VPMOVZXWD(m, y)
			ctx.VPSLLD(U8(16), y, y)
		})
		ctx.ADDQ(U8(16*w.Size), wi)
		ctx.CMPQ(wi, wend)
		ctx.JL(LabelRef(loop))
		ctx.Label(done)
		// The tail chunk ends the last block.
		ctx.CMPQ(wend, lim)
		ctx.JNE(LabelRef(store))
		tail := ctx.GP64()
		ctx.Load(ctx.Param("tail"), tail)
		ctx.TESTQ(tail, tail)
		ctx.JZ(LabelRef(store))
		step(h, func(r int, y reg.VecPhysical) { tailWeights(ctx, Mem{Base: tail, Disp: 64 * r}, h, y) })
		ctx.Label(store)
		for a := range 12 {
			ctx.VMOVUPS(ymm(a), Mem{Base: scratch, Disp: 384*h + 32*a})
		}
	}
	ctx.MOVQ(wend, wi0)
	ctx.CMPQ(wi0, lim)
	ctx.JL(LabelRef("block"))
	for p := range 12 {
		ctx.VMOVUPS(Mem{Base: scratch, Disp: 32 * p}, ymm(p))
		ctx.VADDPS(Mem{Base: scratch, Disp: 384 + 32*p}, ymm(p), ymm(p))
	}
	out := ctx.GP64()
	ctx.Load(ctx.Param("out"), out)
	var v [8]reg.VecPhysical
	for p := range 8 {
		v[perm[p]] = ymm(p)
	}
	ctx.VMOVUPS(reduce8(ctx, v, reg.Y12, reg.Y13), Mem{Base: out})
	for p := range 4 {
		ctx.VXORPS(ymm(p), ymm(p), ymm(p))
		v[perm[p]] = ymm(8 + p)
		v[perm[4+p]] = ymm(p)
	}
	ctx.VMOVUPS(reduce8(ctx, v, reg.Y12, reg.Y13), Mem{Base: out, Disp: 32})
	ctx.ADDQ(U8(64), out)
	ctx.Store(out, ctx.Param("out"))
	tail := ctx.GP64()
	ctx.Load(ctx.Param("tail"), tail)
	ctx.TESTQ(tail, tail)
	ctx.JZ(LabelRef("next"))
	ctx.ADDQ(U32(3*64), tail)
	ctx.Store(tail, ctx.Param("tail"))
	ctx.Label("next")
	ctx.LEAQ(Mem{Base: row, Index: stride, Scale: 2}, row)
	ctx.ADDQ(stride, row)
	ctx.ADDQ(U32(768), scratch)
	tiles := ctx.GP64()
	ctx.Load(ctx.Param("tiles"), tiles)
	ctx.DECQ(tiles)
	ctx.Store(tiles, ctx.Param("tiles"))
	ctx.JNZ(LabelRef("tile"))
	ctx.VZEROUPPER()
	ctx.RET()
}
