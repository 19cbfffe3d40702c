// Command fwdlanes generates lib/engine/gemm_fwd_lanes_amd64.s and its Go
// declarations: the "lane-form" AVX2 kernels of the forward product for
// batches (kernels_fwd_lanes_amd64.go). They give the dot-form kernels'
// bits (../fwdavx2) another way round. An output's 16 lane sums, lane l
// adding x[16k'+l]·w[16k'+l] for k' ascending with one FMA each, are 16
// ordinary products of K/16 terms; here each is a register tile that
// broadcasts one token's element and meets 8·V output rows of a packed
// weight panel (the order of the backward's tiles, ../bwdavx2), and the
// lanes are then added in the dot form's tree (l+8, l+4, l+2, l+1) with
// vertical adds.
//
// Usage (from lib/engine, see the go:generate line in
// kernels_fwd_lanes_amd64.go):
//
//	go run ./internal/asmgen/fwdlanes -out gemm_fwd_lanes_amd64.s -stubs gemm_fwd_lanes_stub_amd64.go
package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/printer"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

func main() {
	asmout.Main("fwdlanes", "gemm_fwd_lanes_amd64.s", "gemm_fwd_lanes_stub_amd64.go", Generate)
}

// Generate returns the assembly and the Go declarations.
func Generate() (asm, decl []byte, err error) {
	ctx := build.NewContext()
	for v := 1; v <= 3; v++ {
		tile(ctx, v)
	}
	for v := 1; v <= 3; v++ {
		planeTile(ctx, v)
	}
	for _, bf := range []bool{false, true} {
		pack(ctx, bf)
	}
	return asmout.Print(ctx, printer.Config{Argv: []string{"go", "run", "./internal/asmgen/fwdlanes"}, Pkg: "engine"})
}

// ymm is Y0..Y15 by number.
func ymm(i int) reg.VecPhysical {
	return []reg.VecPhysical{
		reg.Y0, reg.Y1, reg.Y2, reg.Y3, reg.Y4, reg.Y5, reg.Y6, reg.Y7,
		reg.Y8, reg.Y9, reg.Y10, reg.Y11, reg.Y12, reg.Y13, reg.Y14, reg.Y15,
	}[i]
}

// The tile's flags: lanesResume starts the lanes from the sums in
// scratch instead of zero (a caller that splits the columns into blocks,
// each with its own panel), lanesTree ends with the lane tree into out
// (after the last block), into ys[t][0..8v) for token t instead with
// lanesDirect, added to them with lanesAdd.
const (
	lanesResume = 1
	lanesTree   = 2
	lanesDirect = 4
	lanesAdd    = 8
)

// unroll is the chunks of one trip of a tile's loop (a power of two).
var unroll = 4

// laneBytes is a lane's block of the scratch: 4 tokens × 3 vectors.
const laneBytes = 4 * 3 * 32

// tile generates fwdLanes4x<v>(xp, w, kp, piece, out, scratch, flags, next, ys, pre): for the
// four tokens t of the packed group xp (packTokens' layout: element
// 16c+l of token t at byte 256c+64t+4l, zero past the columns) and the
// 8v rows o of the panel w (lane l's plane at byte l·kp·32v, chunk c's 8v
// rows at 32v·c within it: w[o][16c+l], zero past the columns),
// out[24t+o] = the dot form's sum of x_t·w_o over kp chunks. Lane l's sum
// for 4 × v accumulator vectors runs c ascending, one FMA each; the
// columns go in pieces of piece chunks, all 16 lanes a piece (their sums
// wait in scratch, 16 × 384 bytes, 32-byte aligned) so that the group's
// piece stays in L1 while its 16 lanes read it. The end adds the lanes
// from scratch in the tree l+8, l+4, l+2, l+1: the dot form's bits. A
// caller may split the columns itself and continue the sums from scratch
// (flags lanesResume), running the tree only after the last block
// (lanesTree). Each trip of the loop (unroll chunks) prefetches a line
// of next from the piece's start on: over the 16 lanes, the 4 tokens'
// lines of the piece (next = xp prefetches nothing new), so that the
// next call's first lane finds its group in cache, not in L3. The tree
// first prefetches the lines of pre's four rows (8v outputs each; nil:
// none), which a later call's tree stores: the lm_head's logits rows
// are 607 KB apart, out of the hardware prefetcher's reach.
// Accumulators Y(v·t+j), weights Y(12+j), the broadcast token element Y15.
func tile(ctx *build.Context, v int) {
	name := fmt.Sprintf("fwdLanes4x%d", v)
	asmout.Kernel(ctx, name, "func(xp *float32, w *float32, kp, piece int, out *float32, scratch *float32, flags int, next *float32, ys *[4]*float32, pre *[4]*float32)")
	kp, scratch := ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("kp"), kp)
	ctx.Load(ctx.Param("scratch"), scratch)
	plane := ctx.GP64() // bytes of a lane's plane
	ctx.IMUL3Q(U32(32*v), kp, plane)
	k0, c, lane, px0, pw0, px, pw, cnt, sl := ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	pf := ctx.GP64() // the next group's piece, a line a trip
	// No chunks: only the tree of the sums in scratch (flags lanesTree).
	ctx.TESTQ(kp, kp)
	ctx.JZ(LabelRef("treeonly"))
	ctx.XORQ(k0, k0)
	ctx.Label("piece")
	ctx.Load(ctx.Param("piece"), c)
	ctx.MOVQ(kp, cnt)
	ctx.SUBQ(k0, cnt)
	ctx.CMPQ(c, cnt)
	ctx.CMOVQGT(cnt, c)
	// px0 = xp + 256·k0, pw0 = w + 32v·k0, sl = scratch (xp and w stay
	// in memory: the loops need 12 registers).
	ctx.MOVQ(k0, px0)
	ctx.SHLQ(U8(8), px0)
	ctx.Load(ctx.Param("xp"), px)
	ctx.ADDQ(px, px0)
	ctx.IMUL3Q(U32(32*v), k0, pw0)
	ctx.Load(ctx.Param("w"), pw)
	ctx.ADDQ(pw, pw0)
	ctx.MOVQ(k0, pf)
	ctx.SHLQ(U8(8), pf)
	ctx.Load(ctx.Param("next"), px)
	ctx.ADDQ(px, pf)
	ctx.MOVQ(scratch, sl)
	ctx.XORQ(lane, lane)
	ctx.Label("lane")
	ctx.TESTQ(k0, k0)
	ctx.JNZ(LabelRef("resume"))
	ctx.Load(ctx.Param("flags"), cnt)
	ctx.TESTQ(U32(lanesResume), cnt)
	ctx.JNZ(LabelRef("resume"))
	startAccs(ctx, v, sl)
	ctx.MOVQ(px0, px)
	ctx.MOVQ(pw0, pw)
	chunkLoop(ctx, v, c, cnt, pw, px, sl, 256, 64, func() {
		ctx.PREFETCHT0(Mem{Base: pf})
		ctx.ADDQ(U8(64), pf)
	})
	ctx.ADDQ(U8(4), px0)
	ctx.ADDQ(plane, pw0)
	ctx.ADDQ(U32(laneBytes), sl)
	ctx.INCQ(lane)
	ctx.CMPQ(lane, U8(16))
	ctx.JL(LabelRef("lane"))
	ctx.ADDQ(c, k0)
	ctx.CMPQ(k0, kp)
	ctx.JL(LabelRef("piece"))
	ctx.Label("treeonly")
	ctx.Load(ctx.Param("flags"), cnt)
	ctx.TESTQ(U32(lanesTree), cnt)
	ctx.JZ(LabelRef("ret"))
	// The lines of the rows a later tree writes (pre, nil: none), so that
	// its stores do not wait on memory: the first and last byte of each
	// token's 8v outputs.
	pre, py := ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("pre"), pre)
	ctx.TESTQ(pre, pre)
	ctx.JZ(LabelRef("nopre"))
	for t := range 4 {
		ctx.MOVQ(Mem{Base: pre, Disp: 8 * t}, py)
		ctx.PREFETCHT0(Mem{Base: py})
		ctx.PREFETCHT0(Mem{Base: py, Disp: 32*v - 4})
	}
	ctx.Label("nopre")
	// The tree: lane l + lane l+8, then l+4, l+2, l+1, one output vector
	// (token t, rows 8j..8j+7) at a time, into Y0.
	tree := func(t, j int) {
		p := 32 * (3*t + j)
		for l := range 8 {
			ctx.VMOVUPS(Mem{Base: scratch, Disp: laneBytes*l + p}, ymm(l))
			ctx.VADDPS(Mem{Base: scratch, Disp: laneBytes*(l+8) + p}, ymm(l), ymm(l))
		}
		for l := range 4 {
			ctx.VADDPS(ymm(l+4), ymm(l), ymm(l))
		}
		for l := range 2 {
			ctx.VADDPS(ymm(l+2), ymm(l), ymm(l))
		}
		ctx.VADDPS(reg.Y1, reg.Y0, reg.Y0)
	}
	ctx.TESTQ(U32(lanesDirect), cnt)
	ctx.JNZ(LabelRef("direct"))
	out := ctx.GP64()
	ctx.Load(ctx.Param("out"), out)
	for t := range 4 {
		for j := range v {
			tree(t, j)
			ctx.VMOVUPS(reg.Y0, Mem{Base: out, Disp: 96*t + 32*j})
		}
	}
	ctx.JMP(LabelRef("ret"))
	// Straight into the tokens' output rows ys[t], added to them with
	// lanesAdd (y + sum, as putRow adds).
	ctx.Label("direct")
	ysp, y := ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("ys"), ysp)
	for _, add := range []bool{false, true} {
		if !add {
			ctx.TESTQ(U32(lanesAdd), cnt)
			ctx.JNZ(LabelRef("add"))
		} else {
			ctx.Label("add")
		}
		for t := range 4 {
			ctx.MOVQ(Mem{Base: ysp, Disp: 8 * t}, y)
			for j := range v {
				tree(t, j)
				if add {
					// y + sum, y first as in putRow (which NaN an
					// add returns).
					ctx.VMOVUPS(Mem{Base: y, Disp: 32 * j}, reg.Y1)
					ctx.VADDPS(reg.Y0, reg.Y1, reg.Y0)
				}
				ctx.VMOVUPS(reg.Y0, Mem{Base: y, Disp: 32 * j})
			}
		}
		if !add {
			ctx.JMP(LabelRef("ret"))
		}
	}
	ctx.Label("ret")
	ctx.VZEROUPPER()
	ctx.RET()
}

// planeTile generates fwdLanesPlane4x<v>(x, gstride, w, kc, groups,
// scratch, resume): one lane's sums for groups groups of four tokens
// against one lane's plane of the panel, the lane plane staying in L1
// while the groups stream past it. The tokens are in lane planes (group g's
// chunk c of token t at x + g·gstride + 16c + 4t: contiguous per lane
// and group, not packTokens' line per token and chunk), w is the lane's
// plane (chunk c's 8v rows at 32v·c), and group g's 4 × v sums go to
// scratch + 6144g (the lane's block of tile's scratch; resume ≠ 0 starts
// them from there). Each sum runs c ascending with one FMA each, with
// tile's operand order, so tile's lane tree (flags lanesResume|lanesTree,
// no chunks) finishes them into the dot form's bits.
//
// Each trip of the loop (unroll chunks) prefetches a line of nx and one of
// nw: the next call's lane planes of the tokens (groups·kc·16 bytes, a line
// a trip) and of the panel (kc·32v bytes, fewer), so that the next lane
// does not start on its tokens from L3 and its panel from L2. Passing x
// and w prefetches nothing new.
func planeTile(ctx *build.Context, v int) {
	name := fmt.Sprintf("fwdLanesPlane4x%d", v)
	asmout.Kernel(ctx, name, "func(x *float32, gstride int, w *float32, kc, groups int, scratch *float32, resume int, nx, nw *float32)")
	x, gs, w, kc, n, sl, res := ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	px, pw, cnt := ctx.GP64(), ctx.GP64(), ctx.GP64()
	pfx, pfw := ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("nx"), pfx)
	ctx.Load(ctx.Param("nw"), pfw)
	ctx.Load(ctx.Param("x"), x)
	ctx.Load(ctx.Param("gstride"), gs)
	ctx.Load(ctx.Param("w"), w)
	ctx.Load(ctx.Param("kc"), kc)
	ctx.Load(ctx.Param("groups"), n)
	ctx.Load(ctx.Param("scratch"), sl)
	ctx.Load(ctx.Param("resume"), res)
	ctx.TESTQ(n, n)
	ctx.JZ(LabelRef("ret"))
	ctx.Label("group")
	ctx.TESTQ(res, res)
	ctx.JNZ(LabelRef("resume"))
	startAccs(ctx, v, sl)
	ctx.MOVQ(x, px)
	ctx.MOVQ(w, pw)
	chunkLoop(ctx, v, kc, cnt, pw, px, sl, 16, 4, func() {
		ctx.PREFETCHT0(Mem{Base: pfx})
		ctx.ADDQ(U8(64), pfx)
		ctx.PREFETCHT0(Mem{Base: pfw})
		ctx.ADDQ(U8(64), pfw)
	})
	ctx.ADDQ(gs, x)
	ctx.ADDQ(U32(16*laneBytes), sl)
	ctx.DECQ(n)
	ctx.JNZ(LabelRef("group"))
	ctx.Label("ret")
	ctx.VZEROUPPER()
	ctx.RET()
}

// startAccs is a tile's start on label "resume" (not taken: the 4 × v
// accumulators start at +0) and falls through to label "run" with the
// accumulators loaded from the scratch at sl when jumped to.
func startAccs(ctx *build.Context, v int, sl reg.Register) {
	for t := range 4 {
		for j := range v {
			a := ymm(v*t + j)
			ctx.VXORPS(a, a, a)
		}
	}
	ctx.JMP(LabelRef("run"))
	ctx.Label("resume")
	for t := range 4 {
		for j := range v {
			ctx.VMOVUPS(Mem{Base: sl, Disp: 32 * (3*t + j)}, ymm(v*t+j))
		}
	}
	ctx.Label("run")
}

// chunkLoop runs a lane tile's n chunks (n in a register, cnt its
// counter): unroll chunks a trip, then the rest one at a time, then
// stores the accumulators to the scratch at sl (after label "stored").
// A lane's loop is short (64 chunks at 1024 columns), and fewer,
// predictable trips keep the loop's own instructions and its exit from
// the FMAs'. trip runs after each unrolled trip's FMAs (the lane tile's
// prefetch).
func chunkLoop(ctx *build.Context, v int, n, cnt, pw, px, sl reg.Register, xchunk, tstride int, trip func()) {
	ctx.MOVQ(n, cnt)
	ctx.SHRQ(U8(asmout.Log2(unroll)), cnt)
	ctx.JZ(LabelRef("rest"))
	ctx.Label("loop")
	for d := range unroll {
		chunkFMAs(ctx, v, pw, px, d, xchunk, tstride)
	}
	trip()
	ctx.ADDQ(imm(xchunk*unroll), px)
	ctx.ADDQ(U32(32*v*unroll), pw)
	ctx.DECQ(cnt)
	ctx.JNZ(LabelRef("loop"))
	ctx.Label("rest")
	ctx.MOVQ(n, cnt)
	ctx.ANDQ(U8(unroll-1), cnt)
	ctx.JZ(LabelRef("stored"))
	ctx.Label("one")
	chunkFMAs(ctx, v, pw, px, 0, xchunk, tstride)
	ctx.ADDQ(imm(xchunk), px)
	ctx.ADDQ(U8(32*v), pw)
	ctx.DECQ(cnt)
	ctx.JNZ(LabelRef("one"))
	ctx.Label("stored")
	for t := range 4 {
		for j := range v {
			ctx.VMOVUPS(ymm(v*t+j), Mem{Base: sl, Disp: 32 * (3*t + j)})
		}
	}
}

// imm is n as the narrowest immediate an ADDQ takes (a signed byte up to
// 127).
func imm(n int) Constant {
	if n < 128 {
		return U8(n)
	}
	return U32(n)
}

// chunkFMAs is chunk d of a lane tile: v weight vectors of the panel at
// pw (32·v bytes a chunk) meet the four tokens' elements at px (xchunk
// bytes a chunk, tstride bytes a token), as acc + w·x with the dot form's
// operand order (acc, then w, then x: which NaN an FMA returns).
func chunkFMAs(ctx *build.Context, v int, pw, px reg.Register, d, xchunk, tstride int) {
	for j := range v {
		ctx.VMOVUPS(Mem{Base: pw, Disp: 32*v*d + 32*j}, ymm(12+j))
	}
	for t := range 4 {
		ctx.VBROADCASTSS(Mem{Base: px, Disp: xchunk*d + tstride*t}, reg.Y15)
		for j := range v {
			ctx.VFMADD231PS(reg.Y15, ymm(12+j), ymm(v*t+j))
		}
	}
}

func pack(ctx *build.Context, bf bool) {
	wt := asmout.WeightsOf(bf)
	name := "fwdLanesPack" + wt.Suffix
	asmout.Kernel(ctx, name, fmt.Sprintf("func(dst *float32, ldp, plane uintptr, w %s, stride, chunks int)", wt.GoType))
	dst, plane, src, stride, cnt := ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("dst"), dst)
	ctx.Load(ctx.Param("plane"), plane)
	ctx.Load(ctx.Param("w"), src)
	ctx.Load(ctx.Param("stride"), stride)
	ctx.SHLQ(U8(asmout.Log2(wt.Size)), stride)
	ctx.Load(ctx.Param("chunks"), cnt)
	// Row r at p0 or p3 (src + 3·stride) plus a multiple of stride or s3
	// (3·stride): eight row pointers would leave too few registers.
	s3, p3 := ctx.GP64(), ctx.GP64()
	ctx.LEAQ(Mem{Base: stride, Index: stride, Scale: 2}, s3)
	ctx.LEAQ(Mem{Base: src, Index: s3, Scale: 1}, p3)
	rowAt := []Mem{
		{Base: src}, {Base: src, Index: stride, Scale: 1}, {Base: src, Index: stride, Scale: 2}, {Base: p3},
		{Base: src, Index: stride, Scale: 4}, {Base: p3, Index: stride, Scale: 2}, {Base: src, Index: s3, Scale: 2}, {Base: p3, Index: stride, Scale: 4},
	}
	plane3 := ctx.GP64()
	ctx.LEAQ(Mem{Base: plane, Index: plane, Scale: 2}, plane3)
	q, q3 := ctx.GP64(), ctx.GP64()
	ctx.TESTQ(cnt, cnt)
	ctx.JZ(LabelRef("done"))
	ctx.Label("loop")
	for h := range 2 {
		for r := range 8 {
			m := rowAt[r]
			m.Disp = 8 * wt.Size * h
			if bf {
				ctx.VPMOVZXWD(m, ymm(r))
				ctx.VPSLLD(U8(16), ymm(r), ymm(r))
			} else {
				ctx.VMOVUPS(m, ymm(r))
			}
		}
		// Rows r0..r7 in Y0-Y7 to columns in Y8-Y15 (column i in
		// Y(8+i)): pairs of rows interleaved, then quads, then halves.
		for i := range 4 {
			ctx.VUNPCKLPS(ymm(2*i+1), ymm(2*i), ymm(8+2*i))
			ctx.VUNPCKHPS(ymm(2*i+1), ymm(2*i), ymm(9+2*i))
		}
		// Y8 = r0r1 [0 0 1 1 | 4 4 5 5], Y9 = [2 2 3 3 | 6 6 7 7], Y10/11 r2r3, ...
		for g := range 2 {
			a, b := 8+4*g, 10+4*g                                 // the low and high pair of rows of this quad
			ctx.VSHUFPS(U8(0x44), ymm(b), ymm(a), ymm(4*g+0))     // col 0 | 4
			ctx.VSHUFPS(U8(0xee), ymm(b), ymm(a), ymm(4*g+1))     // col 1 | 5
			ctx.VSHUFPS(U8(0x44), ymm(b+1), ymm(a+1), ymm(4*g+2)) // col 2 | 6
			ctx.VSHUFPS(U8(0xee), ymm(b+1), ymm(a+1), ymm(4*g+3)) // col 3 | 7
		}
		// Y0-Y3 rows 0-3 of columns (0|4), (1|5), (2|6), (3|7); Y4-Y7 rows 4-7.
		for i := range 4 {
			ctx.VPERM2F128(U8(0x20), ymm(4+i), ymm(i), ymm(8+i))
			ctx.VPERM2F128(U8(0x31), ymm(4+i), ymm(i), ymm(12+i))
		}
		ctx.MOVQ(dst, q)
		if h == 1 {
			ctx.LEAQ(Mem{Base: dst, Index: plane, Scale: 8}, q)
		}
		ctx.LEAQ(Mem{Base: q, Index: plane3, Scale: 1}, q3)
		at := []Mem{
			{Base: q}, {Base: q, Index: plane, Scale: 1}, {Base: q, Index: plane, Scale: 2}, {Base: q3},
			{Base: q, Index: plane, Scale: 4}, {Base: q3, Index: plane, Scale: 2}, {Base: q, Index: plane3, Scale: 2}, {Base: q3, Index: plane, Scale: 4},
		}
		for i := range 8 {
			ctx.VMOVUPS(ymm(8+i), at[i])
		}
	}
	ctx.ADDQ(U8(16*wt.Size), src)
	ctx.ADDQ(U8(16*wt.Size), p3)
	ctx.Load(ctx.Param("ldp"), q)
	ctx.ADDQ(q, dst)
	ctx.DECQ(cnt)
	ctx.JNZ(LabelRef("loop"))
	ctx.Label("done")
	ctx.VZEROUPPER()
	ctx.RET()
}
