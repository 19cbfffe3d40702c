package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// zmm is Z0..Z31 by number.
func zmm(i int) reg.VecPhysical {
	return []reg.VecPhysical{
		reg.Z0, reg.Z1, reg.Z2, reg.Z3, reg.Z4, reg.Z5, reg.Z6, reg.Z7,
		reg.Z8, reg.Z9, reg.Z10, reg.Z11, reg.Z12, reg.Z13, reg.Z14, reg.Z15,
		reg.Z16, reg.Z17, reg.Z18, reg.Z19, reg.Z20, reg.Z21, reg.Z22, reg.Z23,
		reg.Z24, reg.Z25, reg.Z26, reg.Z27, reg.Z28, reg.Z29, reg.Z30, reg.Z31,
	}[i]
}

// weights is the weight element type, with this generator's loads.
type weights struct{ asmout.Weights }

func weightsOf(bf bool) weights { return weights{asmout.WeightsOf(bf)} }

// load puts 16 weights at m into z as float32: bfloat16 bits are widened
// exactly (zero-extended to 32 bits, shifted into the upper half). With a
// mask, lanes outside it are zero and their memory is not read.
func (w weights) load(ctx *build.Context, m Mem, z reg.VecPhysical, mask reg.Register) {
	switch {
	case w.BF && mask != nil:
		ctx.VPMOVZXWD_Z(m, mask, z)
	case w.BF:
		ctx.VPMOVZXWD(m, z)
	case mask != nil:
		ctx.VMOVUPS_Z(m, mask, z)
	default:
		ctx.VMOVUPS(m, z)
	}
	if w.BF {
		ctx.VPSLLD(U8(16), z, z)
	}
}

// loadX loads 16 float32 of x, masked or not.
func loadX(ctx *build.Context, m Mem, z reg.VecPhysical, mask reg.Register) {
	if mask != nil {
		ctx.VMOVUPS_Z(m, mask, z)
	} else {
		ctx.VMOVUPS(m, z)
	}
}

// tile4x4 generates fwdTile4x4<F32|BF16>(xp, w, stride, n, tiles, out):
// for each of tiles consecutive 4-row tiles i (rows 4i..4i+3 from w,
// stride apart), out[16i+4t+r] = Σ_k x_t[k]·w[(4i+r)·stride+k] for
// tokens t and rows r in 0..3, k < n. The four tokens come packed
// (xp[64c+16t+l] = x_t[16c+l], zero past n): one stream instead of four
// rows a power of two apart, which would all map to one L1 set.
// Accumulator Z(4r+t) holds (t, r), so the tree leaves out in token-major
// order.
func tile4x4(ctx *build.Context, bf bool) {
	w := weightsOf(bf)
	asmout.Kernel(ctx, "fwdTile4x4"+w.Suffix, fmt.Sprintf("func(xp *float32, w %s, stride, n, tiles int, out *float32)", w.GoType))
	a := loadTileArgs(ctx, w)
	chunks, xp0, row, stride, tiles, out := a.chunks, a.xp0, a.row, a.stride, a.tiles, a.out
	px, pw, left := ctx.GP64(), ctx.GP64(), ctx.GP64()
	rowMem := func(r int) Mem { return a.rowMem(pw, r) }
	step := func(mask reg.Register) {
		for t := range 4 {
			ctx.VMOVUPS(Mem{Base: px, Disp: 64 * t}, zmm(16+t))
		}
		for r := range 4 {
			wz := zmm(20 + r)
			w.load(ctx, rowMem(r), wz, mask)
			for t := range 4 {
				ctx.VFMADD231PS(zmm(16+t), wz, zmm(4*r+t))
			}
		}
	}
	tileBody(ctx, w, tileRegs{xp0, row, chunks, px, pw, left}, 16, step, nil)
	reduce16(ctx)
	ctx.VMOVUPS(reg.Z0, Mem{Base: out})
	ctx.LEAQ(Mem{Base: row, Index: stride, Scale: 4}, row)
	ctx.ADDQ(U8(64), out)
	ctx.DECQ(tiles)
	ctx.JNZ(LabelRef("tile"))
	ctx.VZEROUPPER()
	ctx.RET()
}

// tile4x6 generates fwdTile4x6G<F32|BF16>(xp, w, stride, n, groups, ys,
// col, mask, add, pf, pfEnd): one tile of six weight rows (stride apart)
// meets groups consecutive packed groups of four vectors (each
// packedLen(n) floats), and each sum s = Σ_k x_(4g+t)[k]·w[r·stride+k]
// (group g, token t, row r) goes straight into the output row of its
// vector, ys[4g+t][col+r] = s, or with add ys[4g+t][col+r] += s (the
// sum first, then added to y: the bits of staging the sums and adding
// them after). Only the rows in mask (bit r for row r) are written: a
// last tile overlapping the one before leaves the rows that tile wrote.
// The tile stays in L1 while the groups stream past from L2: each step
// reads four lines of x against six of weights, and a block of rows in L2
// met by one group at a time (the order before) was bound by those six
// reads. Accumulators Z(4r+t) hold rows 0..3 and Z(16+4(r-4)+t) rows 4
// and 5; x is in Z24..Z27, the row being read in Z28; each product is
// fused into its add (VFMADD231PS). Each chunk step also prefetches the
// line at pf into L2 while pf < pfEnd, pf advancing pfStep bytes a step
// (at most 64, so no line is skipped, or a multiple of 64 up to
// 64·pfWideLines with the lines after pf asked for too): the caller
// points it at the next tile's rows, so they come from L2 rather than
// memory when it starts, and spreads them over the tile's steps
// (fwdPrefetchStep); and it prefetches x xAhead bytes on into L1.
//
// With split, the kernel is fwdTile4x6KG<F32|BF16>, which takes a piece
// of the columns and three more arguments: acc, 24 accumulators (384
// floats) per group, mode, and gstride, the bytes between groups (xp is
// the piece of the first). With mode&1 a group starts from its
// accumulators in acc instead of zero; without mode&2 it leaves them
// there instead of reducing them into ys. The caller runs the pieces in
// ascending order (each but the last a whole number of chunks), so every
// lane adds the same products in the same order as over the whole length:
// past 1024 float32 columns the six rows no longer fit L1 beside the
// groups streaming past, and a piece of them does.
func tile4x6(ctx *build.Context, bf, split bool) {
	w := weightsOf(bf)
	name, sig := "fwdTile4x6G", "func(xp *float32, w %s, stride, n, groups int, ys *[]float32, col, mask, add int, pf *byte, pfEnd uintptr, pfStep int)"
	if split {
		name, sig = "fwdTile4x6KG", sig[:len(sig)-1]+", acc *float32, mode, gstride int)"
	}
	asmout.Kernel(ctx, name+w.Suffix, fmt.Sprintf(sig, w.GoType))
	a := loadTileArgsCount(ctx, w, "groups", "ys")
	chunks, xp0, row, stride, tiles, ys := a.chunks, a.xp0, a.row, a.stride, a.tiles, a.out
	setRowMasks(ctx)
	stride5, col := ctx.GP64(), ctx.GP64()
	ctx.LEAQ(Mem{Base: stride, Index: stride, Scale: 4}, stride5)
	ctx.Load(ctx.Param("col"), col)
	pf := ctx.GP64()
	ctx.Load(ctx.Param("pf"), pf)
	px, pw, left := ctx.GP64(), ctx.GP64(), ctx.GP64()
	rowMem := func(r int) Mem {
		switch r {
		case 4:
			return Mem{Base: pw, Index: stride, Scale: 4}
		case 5:
			return Mem{Base: pw, Index: stride5, Scale: 1}
		}
		return a.rowMem(pw, r)
	}
	acc := func(r, t int) reg.VecPhysical {
		if r < 4 {
			return zmm(4*r + t)
		}
		return zmm(16 + 4*(r-4) + t)
	}
	// far (split only): from a step's x to the line xAhead on in the
	// next group's piece, for the last xAhead/256 steps of a piece.
	var far reg.GPVirtual
	farX := false
	if split {
		far = ctx.GP64()
		ctx.MOVQ(chunks, far)
		ctx.SHLQ(U8(8), far)
		ctx.NEGQ(far)
		ctx.ADDQ(paramMem(ctx, "gstride"), far)
		ctx.ADDQ(U32(xAhead), far)
	}
	pfStep := 0
	step := func(mask reg.Register) {
		skip := fmt.Sprintf("nopf%d", pfStep)
		pfStep++
		ctx.CMPQ(pf, paramMem(ctx, "pfEnd"))
		ctx.JAE(LabelRef(skip))
		ctx.PREFETCHT1(Mem{Base: pf})
		// A step over 64 bytes asks for the lines after pf too, up to
		// pfWideLines a step: a decoding step's one to four groups give
		// a tile too few steps to ask for the next one's lines one a
		// step (fwdPrefetchStep).
		adv := fmt.Sprintf("pfadv%d", pfStep)
		for l := 1; l < pfWideLines; l++ {
			ctx.CMPQ(paramMem(ctx, "pfStep"), U32(64*l))
			ctx.JLE(LabelRef(adv))
			ctx.PREFETCHT1(Mem{Base: pf, Disp: 64 * l})
		}
		ctx.Label(adv)
		ctx.ADDQ(paramMem(ctx, "pfStep"), pf)
		ctx.Label(skip)
		if mask == nil {
			for t := range 4 {
				m := Mem{Base: px, Disp: xAhead + 64*t}
				if farX {
					m = Mem{Base: px, Index: far, Scale: 1, Disp: 64 * t}
				}
				ctx.PREFETCHT0(m)
			}
		}
		for t := range 4 {
			ctx.VMOVUPS(Mem{Base: px, Disp: 64 * t}, zmm(24+t))
		}
		for r := range 6 {
			w.load(ctx, rowMem(r), reg.Z28, mask)
			for t := range 4 {
				ctx.VFMADD231PS(zmm(24+t), reg.Z28, acc(r, t))
			}
		}
	}
	// accAt puts the address of this tile's accumulators in acc into dst.
	accAt := func(dst reg.GPVirtual) {
		ctx.Load(ctx.Param("groups"), dst)
		ctx.SUBQ(tiles, dst)
		ctx.IMUL3Q(U32(24*64), dst, dst)
		ctx.ADDQ(paramMem(ctx, "acc"), dst)
	}
	resume := func() {
		// The group's output lines, into L1 while its products run: the
		// add reads them at the end, and a line missing there stalled
		// the next group behind it.
		for t := range 4 {
			ctx.MOVQ(Mem{Base: ys, Disp: sliceHeader * t}, px)
			ctx.PREFETCHT0(Mem{Base: px, Index: col, Scale: 4})
			ctx.PREFETCHT0(Mem{Base: px, Index: col, Scale: 4, Disp: 20})
		}
		if !split {
			return
		}
		ctx.TESTQ(U32(1), paramMem(ctx, "mode"))
		ctx.JZ(LabelRef("fresh"))
		accAt(px)
		for i := range 24 {
			ctx.VMOVUPS(Mem{Base: px, Disp: 64 * i}, zmm(i))
		}
		ctx.Label("fresh")
	}
	r := tileRegs{xp0, row, chunks, px, pw, left}
	if split {
		tileBodyFar(ctx, w, r, step, resume, func(on bool) { farX = on })
	} else {
		tileBody(ctx, w, r, 24, step, resume)
	}
	// The next group: gstride on from this piece, or (whole rows) after
	// this group's chunks, the tail's too.
	if split {
		ctx.ADDQ(paramMem(ctx, "gstride"), xp0)
	} else {
		ctx.MOVQ(px, xp0)
		ctx.KORTESTW(reg.K1, reg.K1)
		ctx.JZ(LabelRef("nexttail"))
		ctx.ADDQ(U32(256), xp0)
		ctx.Label("nexttail")
	}
	if split {
		ctx.TESTQ(U32(2), paramMem(ctx, "mode"))
		ctx.JNZ(LabelRef("final"))
		accAt(px)
		for i := range 24 {
			ctx.VMOVUPS(zmm(i), Mem{Base: px, Disp: 64 * i})
		}
		ctx.JMP(LabelRef("advance"))
		ctx.Label("final")
	}
	// Rows 0..3: lanes 4t..4t+3 of the tree's result are token t's.
	reduce16Using(ctx, reg.Z24, reg.Z25)
	rows := tileRows{ys: ys, col: col, po: px} // px is free after the loop
	rows.put(ctx, "r03", 0, reg.K2)
	// Rows 4 and 5: the same tree over their eight accumulators leaves
	// them in lanes 4t and 4t+1.
	reduce8Using(ctx, reg.Z24, reg.Z25)
	rows.put(ctx, "r45", 16, reg.K3)
	if split {
		ctx.Label("advance")
	}
	ctx.ADDQ(U8(4*sliceHeader), ys)
	ctx.DECQ(tiles)
	ctx.JNZ(LabelRef("tile"))
	ctx.VZEROUPPER()
	ctx.RET()
}

// pfWideLines is the most lines of the next tile a 4×6 tile's chunk
// step prefetches (pfStep up to 64·pfWideLines bytes). With one group
// (four decoding rows) a tile of 1024 bfloat16 columns has 64 steps for
// 192 lines: one line a step left rows 2-5 of every tile to come from
// memory on demand (their loads' widening held 67% of the kernel's
// samples). Six: one group's step reads six lines of float32 weights, and
// so many of the next tile's cover it in as many steps
// (fwdPrefetchEvenLines in lib/engine).
const pfWideLines = 6

// xAhead is how far ahead of the chunk it reads (bytes, 16 chunks) the
// 4×6 tile prefetches the packed vectors into L1: the hardware
// prefetchers left its x loads from L2 stalling. With whole rows the
// groups lie one after another, so the stream runs on into the next
// group (past the last it prefetches whatever follows, which never
// faults); paired on one thread (0.6B shapes of 1024 columns, M = 512
// and 1024, a loaded machine), 4 KiB ahead took 3-5% less time, 512
// bytes ahead 1-3%, 8 KiB about as 4. In pieces (fwdTile4x6KG) the next
// group's piece is a gstride away: running on into this group's next
// piece was 0-4% slower than no prefetch, and the last 16 steps of a
// piece prefetching from the next group's (tileBodyFar) 1-3% faster.
const xAhead = 4096

// sliceHeader is the size of a Go slice header (pointer, length,
// capacity): ys points at the group's first output row's.
const sliceHeader = 24

// setRowMasks sets K2 to the bits of rows 0..3 in the argument mask and
// K3 to those of rows 4 and 5.
func setRowMasks(ctx *build.Context) {
	ctx.Load(ctx.Param("mask"), reg.RAX)
	ctx.KMOVW(reg.EAX, reg.K2)
	ctx.SHRL(U8(4), reg.EAX)
	ctx.KMOVW(reg.EAX, reg.K3)
}

// tileRows are the registers a 4×6 tile writes its sums with: the
// group's output rows (slice headers), the first column and a scratch
// pointer.
type tileRows struct{ ys, col, po reg.GPVirtual }

// put writes each token's sums, lanes 4t.. of Z0, to its row at column
// col + disp/4 under mask k (four or two lanes), added to the row's
// values when the argument add is not zero: y + s, y the first operand
// as in Go's y += s (which NaN an add of two NaNs keeps). The add
// loads zeros where the mask is off, which the store then skips.
func (r tileRows) put(ctx *build.Context, label string, disp int, k reg.Register) {
	each := func(add bool) {
		for t := range 4 {
			ctx.MOVQ(Mem{Base: r.ys, Disp: sliceHeader * t}, r.po)
			y := Mem{Base: r.po, Index: r.col, Scale: 4, Disp: disp}
			ctx.VEXTRACTF32X4(U8(t), reg.Z0, reg.X1)
			if add {
				ctx.VMOVUPS_Z(y, k, reg.X2)
				ctx.VADDPS(reg.X1, reg.X2, reg.X1)
			}
			ctx.VMOVUPS(reg.X1, k, y)
		}
	}
	ctx.CMPQ(paramMem(ctx, "add"), U8(0))
	ctx.JNE(LabelRef(label + "add"))
	each(false)
	ctx.JMP(LabelRef(label + "done"))
	ctx.Label(label + "add")
	each(true)
	ctx.Label(label + "done")
}

// paramMem is the memory operand of an integer or pointer argument.
func paramMem(ctx *build.Context, name string) Mem {
	b, err := ctx.Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// tileArgs are what both tile kernels load first: the count of full
// 16-column chunks (with K1 set to the tail's mask), the packed group,
// the first row, the row stride in bytes and three times it, the tile
// count and out.
type tileArgs struct{ chunks, xp0, row, stride, stride3, tiles, out reg.GPVirtual }

func loadTileArgs(ctx *build.Context, w weights) tileArgs {
	return loadTileArgsCount(ctx, w, "tiles", "out")
}

// loadTileArgsCount is loadTileArgs with the count and the output in the
// named arguments.
func loadTileArgsCount(ctx *build.Context, w weights, count, out string) tileArgs {
	var a tileArgs
	a.chunks = ctx.GP64()
	ctx.Load(ctx.Param("n"), a.chunks)
	setTailMask(ctx, a.chunks)
	ctx.SHRQ(U8(4), a.chunks)
	a.xp0, a.row, a.stride, a.stride3 = ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("xp"), a.xp0)
	ctx.Load(ctx.Param("w"), a.row)
	ctx.Load(ctx.Param("stride"), a.stride)
	ctx.SHLQ(U8(asmout.Log2(w.Size)), a.stride)
	ctx.LEAQ(Mem{Base: a.stride, Index: a.stride, Scale: 2}, a.stride3)
	a.tiles, a.out = ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param(count), a.tiles)
	ctx.Load(ctx.Param(out), a.out)
	return a
}

// rowMem addresses row r (0..3) of a tile whose first row is at pw.
func (a tileArgs) rowMem(pw reg.GPVirtual, r int) Mem {
	switch r {
	case 0:
		return Mem{Base: pw}
	case 1:
		return Mem{Base: pw, Index: a.stride, Scale: 1}
	case 2:
		return Mem{Base: pw, Index: a.stride, Scale: 2}
	}
	return Mem{Base: pw, Index: a.stride3, Scale: 1}
}

// tileRegs are a tile kernel's pointers: the packed group's start, the
// tile's first row, the count of full 16-column chunks, and the running
// x and w pointers and chunk counter.
type tileRegs struct{ xp0, row, chunks, px, pw, left reg.GPVirtual }

// tileBody emits a tile from its label "tile" to "done": accs
// accumulators Z0.. zeroed, then resume (when not nil; it may use r.px),
// the running pointers reset, step over every full chunk, then once with
// the tail mask K1 when n is not a multiple of 16.
func tileBody(ctx *build.Context, w weights, r tileRegs, accs int, step func(mask reg.Register), resume func()) {
	tileStart(ctx, r, accs, resume)
	chunkLoop(ctx, r.left, step, func() {
		ctx.ADDQ(U32(256), r.px)
		ctx.ADDQ(U8(16*w.Size), r.pw)
	})
}

// tileStart emits a tile's label, its accs accumulators zeroed, resume
// (when not nil) and the running pointers and count reset.
func tileStart(ctx *build.Context, r tileRegs, accs int, resume func()) {
	ctx.Label("tile")
	for a := range accs {
		ctx.VPXORD(zmm(a), zmm(a), zmm(a))
	}
	if resume != nil {
		resume()
	}
	ctx.MOVQ(r.xp0, r.px)
	ctx.MOVQ(r.row, r.pw)
	ctx.MOVQ(r.chunks, r.left)
}

// tileBodyFar is tileBody for the 4×6 tile in pieces: the chunk loop runs
// in two parts, the steps before the last xAhead/256 of a piece (setFar
// false: step prefetches x xAhead on in this piece) and those (setFar
// true: step prefetches from the next group's piece).
func tileBodyFar(ctx *build.Context, w weights, r tileRegs, step func(mask reg.Register), resume func(), setFar func(bool)) {
	tileStart(ctx, r, 24, resume)
	next := func() {
		ctx.ADDQ(U32(256), r.px)
		ctx.ADDQ(U8(16*w.Size), r.pw)
		ctx.DECQ(r.left)
	}
	farSteps := xAhead / 256
	ctx.CMPQ(r.left, U8(farSteps))
	ctx.JLE(LabelRef("farpart"))
	ctx.Label("nearloop")
	setFar(false)
	step(nil)
	next()
	ctx.CMPQ(r.left, U8(farSteps))
	ctx.JG(LabelRef("nearloop"))
	ctx.Label("farpart")
	ctx.TESTQ(r.left, r.left)
	ctx.JZ(LabelRef("tail"))
	ctx.Label("farloop")
	setFar(true)
	step(nil)
	next()
	ctx.JNZ(LabelRef("farloop"))
	maskedTail(ctx, step)
}

// chunkLoop emits step for each of the count full 16-column chunks (count
// is used up), next after each, then step once with the tail mask K1 when
// it is not empty, ending at the label "done".
func chunkLoop(ctx *build.Context, count reg.GPVirtual, step func(mask reg.Register), next func()) {
	ctx.TESTQ(count, count)
	ctx.JZ(LabelRef("tail"))
	ctx.Label("loop")
	step(nil)
	next()
	ctx.DECQ(count)
	ctx.JNZ(LabelRef("loop"))
	maskedTail(ctx, step)
}

// maskedTail emits, at the label "tail", step with the tail mask K1 when
// it is not empty, ending at the label "done".
func maskedTail(ctx *build.Context, step func(mask reg.Register)) {
	ctx.Label("tail")
	ctx.KORTESTW(reg.K1, reg.K1)
	ctx.JZ(LabelRef("done"))
	step(reg.K1)
	ctx.Label("done")
}

// setTailMask sets K1 to the low n mod 16 bits (zero when there is no
// tail) and leaves n mod 16 in RCX.
func setTailMask(ctx *build.Context, n reg.GPVirtual) {
	ctx.MOVQ(n, reg.RCX)
	ctx.ANDQ(U32(15), reg.RCX)
	ctx.MOVL(U32(1), reg.EAX)
	ctx.SHLL(reg.CL, reg.EAX)
	ctx.DECL(reg.EAX)
	ctx.KMOVW(reg.EAX, reg.K1)
}

// row16 generates fwdRow16<F32|BF16>(x, w, stride, n, out): out[r] =
// Σ_k x[k]·w[r·stride+k] for rows r in 0..15, k < n, each row one
// accumulator adding its 16-column chunks in ascending order (the bits of
// dotLanes). Decoding one sequence streamed every weight through it
// until rowLong, which keeps its widening and pacing and reads four long
// streams (it stays for the benchmarks to compare); so it is written for
// memory, not arithmetic:
//
//   - Four rows at a time (row16Group), one after another through the
//     16: four add chains (one chain, 4 cycles per 16 columns, was near
//     the 2.1 GHz Xeon's share of memory per core with bfloat16) and
//     each x chunk loaded once for four rows. Walking all 16 rows per
//     column block instead makes 16 short streams that the hardware
//     prefetcher keeps relearning (a 311 MB bfloat16 matrix read at 13.0
//     GB/s on one core and 17.8 on two that way, 22.2 and 30.9 one row
//     at a time; a plain read of memory: 31.0).
//   - Each step prefetches, into L2 (PREFETCHT1), the line the next group
//     of rows reads at the same column (the next call's first rows for
//     the last group; past a matrix's last rows it prefetches whatever
//     follows, which never faults): the L2 streamer stops at every 4 KiB
//     page, and a row group of the 0.6B shape spans 8 KiB (bfloat16,
//     1024 columns) to 48 KiB (float32, 3072). Fixed distances did worse
//     on one shape or the other (4 KiB ahead of four bfloat16 rows of 2
//     KiB lands in the group being read). Against the kernel before (one
//     row at a time, no prefetch), best of interleaved passes over 672 MiB of
//     one-token products on two loaded cores: 1.5-1.7x the bytes per
//     second with bfloat16 weights, 1.3x with float32, level with the
//     bf16 path's prefetching kernels; in BenchmarkBF16Decode's mean
//     passes 0.75-0.9 of their rate, against 0.4-0.55 before.
//   - bfloat16 weights are widened by a 256-bit broadcast load and one
//     in-quarter byte shuffle (row16WidenCtl), not VPMOVZXWD and VPSLLD:
//     on Zen 4 the zero-extension (a shuffle across the register) and the
//     shift held the kernel at 0.80 of the read probe's bytes per
//     CPU-second on one core while the float32 kernel read 0.85-0.93;
//     this form reads 0.87-0.88, 1.07-1.10x the bytes per CPU-second
//     (docs/engine-decoding.md, "The kernel on Zen 4: the broadcast form").
//     The lanes then hold the chunk's columns
//     with 128-bit quarters 1 and 2 swapped; x is loaded with the same
//     swap and every accumulator swapped back before the tree, so each
//     lane adds the same products in the same order (the same bits). The
//     masked tail keeps the zero-extension (a broadcast would read past
//     the row), swapped to match. That the widening held it was the
//     wrong reading, though: the zero-extension was 1.29x faster than
//     the broadcast with its weights in L2, slower only from memory.
//   - One more VPSHUFB a bfloat16 weight line (every other chunk), into
//     a register nothing reads (row16Pace). On Zen 4 the kernel read memory
//     slower the faster it ran from L2: its hot rate (rows in L2) was about
//     twice its rate from memory, and forms that widen 1.2-1.7x faster in L2
//     read 0.87-0.95x as much from memory per CPU-second; the pacing shuffle
//     (0.8x in L2) reads 1.12-1.17x on one thread and 1.14-1.16x on two
//     (docs/engine-decoding.md, "Pacing the row kernel (row16Pace)"). Why
//     was not settled; it is a tuning for this host, and a core whose memory
//     outruns 0.8x of this loop's L2 rate would lose by it.
//
// Accumulator Z(4(r%4)+r/4) holds row r, so the tree leaves out in row
// order.
func row16(ctx *build.Context, bf bool) { row16Paced(ctx, bf, bf, "") }

// row16Unpaced generates fwdRow16BF16Unpaced, the bfloat16 kernel without
// its pacing shuffle (row16Pace), for benchmarks to compare against.
func row16Unpaced(ctx *build.Context) { row16Paced(ctx, true, false, "Unpaced") }

// row16Paced is row16 with or without the pacing shuffle, named with
// suffix after the weight type.
func row16Paced(ctx *build.Context, bf, pace bool, suffix string) {
	w := weightsOf(bf)
	asmout.Kernel(ctx, "fwdRow16"+w.Suffix+suffix, fmt.Sprintf("func(x *float32, w %s, stride, n int, out *[16]float32)", w.GoType))
	var a row16Args
	a.w = w
	a.pace = pace
	if bf {
		ctx.VMOVDQU32(row16WidenCtl, row16Ctl)
	}
	a.x0, a.stride, a.stride3, a.base = ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("x"), a.x0)
	ctx.Load(ctx.Param("stride"), a.stride)
	ctx.SHLQ(U8(asmout.Log2(w.Size)), a.stride)
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
	for i := range 16 {
		ctx.VPXORD(zmm(i), zmm(i), zmm(i))
	}
	a.px, a.pw, a.pn, a.cnt = ctx.GP64(), ctx.GP64(), ctx.GP64(), ctx.GP64()
	for r0 := 0; r0 < 16; r0 += row16Group {
		row16Group4(ctx, a, r0)
	}
	row16Finish(ctx, bf)
}

// row16Finish ends a one-token kernel over 16 rows (row16, rowLong): the
// bfloat16 lanes back in column order, the tree into Z0, out written.
func row16Finish(ctx *build.Context, bf bool) {
	if bf {
		for i := range 16 { // the lanes back in column order, for the tree
			swapQuarters(ctx, zmm(i))
		}
	}
	reduce16(ctx)
	out := ctx.GP64()
	ctx.Load(ctx.Param("out"), out)
	ctx.VMOVUPS(reg.Z0, Mem{Base: out})
	ctx.VZEROUPPER()
	ctx.RET()
}

// row16Group is the rows row16 reads at once.
const row16Group = 4

// row16Args are row16's registers: x, the row stride in bytes and three
// times it, the group's first row, the counts of full chunks and of tail
// columns, and the running x, weight, prefetch and loop counters.
type row16Args struct {
	w                             weights
	pace                          bool
	x0, stride, stride3, base     reg.GPVirtual
	chunks, tail, px, pw, pn, cnt reg.GPVirtual
}

// row16Ctl holds row16WidenCtl in the bfloat16 kernel.
var row16Ctl = reg.Z21

// row16Pace receives the bfloat16 kernel's pacing shuffle, one VPSHUFB a
// weight line whose result nothing reads: it slows the loop from L2 and
// speeds it from memory (row16's notes).
var row16Pace = reg.Z22

// row16WidenCtl is the VPSHUFB control of row16's bfloat16 widening. A
// chunk's 16 bfloat16 (32 bytes) are broadcast into both 256-bit halves
// of a register, [w0-7 | w8-15 | w0-7 | w8-15] in 128-bit quarters, and
// the byte shuffle, which stays within each quarter, puts quarter q's
// bfloat16 j = i + 4(q/2) (i < 4) into the upper half of its 32-bit lane
// i, zeroing the lower: columns 0-3, 8-11, 4-7, 12-15 (0x80 zeroes a
// byte). So the lanes hold the chunk's columns with quarters 1 and 2
// swapped (swapQuarters).
var row16WidenCtl Mem

// row16Tables emits row16WidenCtl's data.
func row16Tables(ctx *build.Context) {
	row16WidenCtl = ctx.StaticGlobal("row16WidenCtl")
	ctx.DataAttributes(attr.RODATA | attr.NOPTR)
	for q := range 4 {
		for i := range 4 {
			j := i + 4*(q/2)
			ctx.AddDatum(16*q+4*i, U32(0x8080|(2*j)<<16|(2*j+1)<<24))
		}
	}
}

// swapQuarters swaps z's 128-bit quarters 1 and 2 (lanes 4-7 and 8-11),
// its own inverse: the lane order of row16WidenCtl's widening.
func swapQuarters(ctx *build.Context, z reg.VecPhysical) {
	ctx.VSHUFF32X4(U8(0xD8), z, z, z)
}

// row16Group4 emits rows r0..r0+3 of row16: the chunks a weight line at a
// time (two chunks of bfloat16, one of float32) with the next group's
// line prefetched, then a last lone bfloat16 chunk, then the masked tail;
// it leaves base at the next group.
func row16Group4(ctx *build.Context, a row16Args, r0 int) {
	w := a.w
	u := 64 / (16 * w.Size) // chunks per weight line
	row := func(base reg.GPVirtual, i, disp int) Mem { return nth(base, i, disp, a.stride, a.stride3) }
	step := func(mask reg.Register, c int) {
		loadX(ctx, Mem{Base: a.px, Disp: 64 * c}, zmm(16), mask)
		if w.BF {
			swapQuarters(ctx, zmm(16))
		}
		for i := range row16Group {
			r := r0 + i
			z := zmm(17 + i)
			m := row(a.pw, i, 16*w.Size*c)
			switch {
			case w.BF && mask == nil:
				ctx.VBROADCASTI32X8(m, z)
				ctx.VPSHUFB(row16Ctl, z, z)
				if a.pace && c == 0 { // once a weight line; nothing reads it (row16Pace)
					ctx.VPSHUFB(row16Ctl, z, row16Pace)
				}
			case w.BF: // the masked tail: a broadcast would read past it
				w.load(ctx, m, z, mask)
				swapQuarters(ctx, z)
			default:
				w.load(ctx, m, z, mask)
			}
			ctx.VFMADD231PS(zmm(16), z, zmm(4*(r%4)+r/4))
		}
	}
	loop, one, tail, next := fmt.Sprintf("row%d", r0), fmt.Sprintf("one%d", r0), fmt.Sprintf("tail%d", r0), fmt.Sprintf("next%d", r0)
	ctx.MOVQ(a.x0, a.px)
	ctx.MOVQ(a.base, a.pw)
	ctx.LEAQ(Mem{Base: a.base, Index: a.stride, Scale: 4}, a.pn)
	ctx.MOVQ(a.chunks, a.cnt)
	if u > 1 {
		ctx.SHRQ(U8(asmout.Log2(u)), a.cnt)
	}
	ctx.TESTQ(a.cnt, a.cnt)
	ctx.JZ(LabelRef(one))
	ctx.Label(loop)
	for i := range row16Group {
		ctx.PREFETCHT1(row(a.pn, i, 0))
	}
	for c := range u {
		step(nil, c)
	}
	ctx.ADDQ(U8(64*u), a.px)
	ctx.ADDQ(U8(64), a.pw)
	ctx.ADDQ(U8(64), a.pn)
	ctx.DECQ(a.cnt)
	ctx.JNZ(LabelRef(loop))
	ctx.Label(one)
	if u == 2 {
		ctx.TESTQ(U32(1), a.chunks)
		ctx.JZ(LabelRef(tail))
		step(nil, 0)
		ctx.ADDQ(U8(64), a.px)
		ctx.ADDQ(U8(32), a.pw)
	}
	ctx.Label(tail)
	ctx.TESTQ(a.tail, a.tail)
	ctx.JZ(LabelRef(next))
	step(reg.K1, 0)
	ctx.Label(next)
	ctx.LEAQ(Mem{Base: a.base, Index: a.stride, Scale: 4}, a.base)
}

// reduce16 adds the lanes of the 16 accumulators Z0..Z15 (A_i) in the tree
// of dotLanes and leaves the 16 sums in Z0: lane 4b+q holds A_(4q+b).
// Level 1 pairs A_i's 256-bit halves (lane i + lane i+8), level 2 its
// 128-bit quarters (i + i+4), levels 3 and 4 the elements of each quarter
// (i + i+2, then i + i+1); each level packs two vectors' results into one.
func reduce16(ctx *build.Context) { reduce16Using(ctx, reg.Z16, reg.Z17) }

// reduce16Using is reduce16 with lo and hi (not Z0..Z15) as scratch.
func reduce16Using(ctx *build.Context, lo, hi reg.VecPhysical) {
	lv := treeLevels{ctx, lo, hi}
	lv.halves(0, 8)
	lv.quarters(4)
	lv.pairs(2)
	lv.elems()
}

// reduce8Using is reduce16Using over the eight accumulators Z16..Z23
// alone: lane 4b+q of Z0 holds Z(16+4q+b)'s sum for q < 2, as
// reduce16Using would leave it with these in Z0..Z7, and its lanes 4b+2
// and 4b+3 are left over from Z1 (the callers do not read them). Each
// sum is one accumulator's own tree, so leaving out the other eight
// changes no bits; the 4×6 tile's rows 4 and 5 took a full tree over
// them and eight zeroed accumulators (45 shuffles and adds, 24 of them
// on zeros) plus 16 moves and clears.
func reduce8Using(ctx *build.Context, lo, hi reg.VecPhysical) {
	lv := treeLevels{ctx, lo, hi}
	lv.halves(16, 4)
	lv.quarters(2)
	lv.pairs(1)
	lv.elems()
}

// treeLevels emits the levels of reduce16's tree, lo and hi scratch.
type treeLevels struct {
	ctx    *build.Context
	lo, hi reg.VecPhysical
}

// pair packs the two halves (imm selects them) of a and b into dst as
// one vector of sums: dst = shuf(immLo) + shuf(immHi).
func (lv treeLevels) pair(vshuf func(imm uint8, b, a, dst reg.VecPhysical), immLo, immHi uint8, a, b, dst reg.VecPhysical) {
	vshuf(immLo, b, a, lv.lo)
	vshuf(immHi, b, a, lv.hi)
	lv.ctx.VADDPS(lv.hi, lv.lo, dst)
}

func (lv treeLevels) f(imm uint8, b, a, dst reg.VecPhysical) { lv.ctx.VSHUFF32X4(U8(imm), b, a, dst) }
func (lv treeLevels) s(imm uint8, b, a, dst reg.VecPhysical) { lv.ctx.VSHUFPS(U8(imm), b, a, dst) }

// halves is level 1 over count pairs Z(src+2j), Z(src+2j+1) into Zj.
func (lv treeLevels) halves(src, count int) {
	for j := range count {
		lv.pair(lv.f, 0x44, 0xee, zmm(src+2*j), zmm(src+2*j+1), zmm(j))
	}
}

// quarters, pairs and elems are levels 2, 3 and 4 over Z0.. in place.
func (lv treeLevels) quarters(count int) { lv.level(count, lv.f, 0x88, 0xdd) }
func (lv treeLevels) pairs(count int)    { lv.level(count, lv.s, 0x44, 0xee) }
func (lv treeLevels) elems()             { lv.level(1, lv.s, 0x88, 0xdd) }

func (lv treeLevels) level(count int, vshuf func(imm uint8, b, a, dst reg.VecPhysical), immLo, immHi uint8) {
	for j := range count {
		lv.pair(vshuf, immLo, immHi, zmm(2*j), zmm(2*j+1), zmm(j))
	}
}

// packGroup generates fwdPackGroup(dst, x0, x1, x2, x3, n): the packed
// layout of the tile kernels for one group of four vectors of n columns,
// dst[64c+16t+l] = x_t[16c+l], with zeros past n in the last chunk. Go's
// copy of each 16-column piece (a memmove call per 64 bytes) made packing
// a batch 6% of a 128-vector product, done while the other cores wait.
func packGroup(ctx *build.Context) {
	asmout.Kernel(ctx, "fwdPackGroup", "func(dst, x0, x1, x2, x3 *float32, n int)")
	chunks := ctx.GP64()
	ctx.Load(ctx.Param("n"), chunks)
	setTailMask(ctx, chunks)
	ctx.SHRQ(U8(4), chunks)
	dst, off := ctx.GP64(), ctx.GP64()
	ctx.Load(ctx.Param("dst"), dst)
	xs := make([]reg.GPVirtual, 4)
	for t := range xs {
		xs[t] = ctx.GP64()
		ctx.Load(ctx.Param(fmt.Sprintf("x%d", t)), xs[t])
	}
	ctx.XORQ(off, off)
	step := func(mask reg.Register) {
		for t := range 4 {
			loadX(ctx, Mem{Base: xs[t], Index: off, Scale: 1}, zmm(t), mask)
		}
		for t := range 4 {
			ctx.VMOVUPS(zmm(t), Mem{Base: dst, Disp: 64 * t})
		}
	}
	chunkLoop(ctx, chunks, step, func() {
		ctx.ADDQ(U32(256), dst)
		ctx.ADDQ(U8(64), off)
	})
	ctx.VZEROUPPER()
	ctx.RET()
}
