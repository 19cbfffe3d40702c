// Command attn generates lib/engine/kernels_attn_amd64.s and its Go
// declarations: the AVX-512 register tiles of the engine's attention (see
// lib/engine/kernels_attn.go for the order every path keeps).
//
//   - attnDotsZ<R>: R queries' scores against a tile of eight keys in the
//     512-bit pair layout (lib/engine/kernels_attn_avx512.go, packPairs):
//     each score is attnDot's eight lanes, one fused multiply-add per term
//     in ascending element order, then its lane tree (the same adds as
//     the Go kernels' laneSums4, done on whole registers: laneSums8).
//   - attnTileZ<R>: C[i][:64] += Σ_p A[i][p]·B[p][:64] for R rows i, p
//     ascending, one fused multiply-add per term, A's rows and columns
//     each at a stride of their own: the weighted sums of the values
//     (forward, dq) and of the heads (dk, dv).
//
// Go's compiler keeps loop-carried vectors in X0-X14 and has only the
// three-operand FMA that overwrites a multiplicand, so its accumulating
// loops copy every accumulator back each pass; here the tiles hold 16-24
// accumulators in Z0-Z31 and add into them in place (VFMADD231PS).
//
// Usage (from lib/engine, see the go:generate line in kernels_attn_asm_amd64.go):
//
//	go run ./internal/asmgen/attn
package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/printer"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// Outputs, relative to lib/engine (where go generate runs this).
const (
	asmFile  = "kernels_attn_amd64.s"
	stubFile = "kernels_attn_stub_amd64.go"
)

// Largest tiles: dotsMax queries × four key pairs (16 accumulators),
// tileMax rows × four vectors (24 accumulators).
const (
	dotsMax = 4
	tileMax = 6
)

func main() { asmout.Main("attn", asmFile, stubFile, Generate) }

// Generate returns the assembly and the Go declarations.
func Generate() (asm, decl []byte, err error) {
	ctx := build.NewContext()
	for r := 1; r <= dotsMax; r++ {
		dots(ctx, r)
	}
	for r := 1; r <= tileMax; r++ {
		tile(ctx, r)
	}
	return asmout.Print(ctx, printer.Config{Argv: []string{"go", "run", "./internal/asmgen/attn"}, Pkg: "engine"})
}

// dots emits attnDotsZ<r>. Arguments: d (query i's eight scores go to
// d + i·ld bytes), q2 (the doubled queries, 2·hd floats each, one after
// another), k (four key pairs, 2·hd floats each), hd (a multiple of 8).
// Accumulators are Z16-Z31 (query i, pair m: Z16+4i+m); the reduction
// (laneSums8) runs in Z0-Z6.
func dots(ctx *build.Context, r int) {
	name := fmt.Sprintf("attnDotsZ%d", r)
	asmout.Kernel(ctx, name, "func(d *float32, ld uintptr, q2 *float32, k *float32, hd int)")
	ctx.Doc(fmt.Sprintf("%s stores %d queries' scores against eight paired keys.", name, r))
	acc := func(i, m int) reg.VecPhysical { return asmout.ZMM(16 + 4*i + m) }
	for i := range r {
		for m := range 4 {
			ctx.VPXORD(acc(i, m), acc(i, m), acc(i, m))
		}
	}
	q2 := ctx.Load(ctx.Param("q2"), ctx.GP64())
	k := ctx.Load(ctx.Param("k"), ctx.GP64())
	stride := ctx.Load(ctx.Param("hd"), ctx.GP64())
	ctx.SHLQ(operand.U8(3), stride) // bytes per doubled head
	qp, kp := asmout.Pointers(ctx, q2, stride, r), asmout.Pointers(ctx, k, stride, 4)
	off := ctx.GP64()
	ctx.XORQ(off, off)
	ctx.Label("loop")
	for i := range r {
		ctx.VMOVUPS(operand.Mem{Base: qp[i], Index: off, Scale: 1}, asmout.ZMM(i))
	}
	kv := asmout.ZMM(dotsMax)
	for m := range 4 {
		ctx.VMOVUPS(operand.Mem{Base: kp[m], Index: off, Scale: 1}, kv)
		for i := range r {
			ctx.VFMADD231PS(kv, asmout.ZMM(i), acc(i, m))
		}
	}
	ctx.ADDQ(operand.U8(64), off)
	ctx.CMPQ(off, stride)
	ctx.JB(operand.LabelRef("loop"))
	d := ctx.Load(ctx.Param("d"), ctx.GP64())
	ld := ctx.Load(ctx.Param("ld"), ctx.GP64())
	for i := range r {
		if i > 0 {
			ctx.ADDQ(ld, d)
		}
		laneSums8(ctx, [4]reg.VecPhysical{acc(i, 0), acc(i, 1), acc(i, 2), acc(i, 3)}, d)
	}
	ctx.VZEROUPPER()
	ctx.RET()
}

// laneSums8 stores to d the eight scores held in a (a[m]: keys 2m and
// 2m+1, eight lanes each), each ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)) as
// attnDot adds them, with vertical adds on whole registers: even and odd
// lanes of two registers apart (VSHUFPS) then added give the pair sums of
// four keys, twice over; the same on those gives the four-lane sums; the
// 128-bit halves swapped (VSHUFF32X4) and added give the totals, which
// two unpacks put in key order. Ten shuffles a query where the VHADDPS
// pairs took 22, each competing with the fused multiply-adds for the
// shuffle port. Temporaries Z0-Z6.
func laneSums8(ctx *build.Context, a [4]reg.VecPhysical, d reg.Register) {
	e, o, b1, b2 := asmout.ZMM(0), asmout.ZMM(1), asmout.ZMM(2), asmout.ZMM(3)
	pairs := func(x, y, dst reg.VecPhysical) {
		ctx.VSHUFPS(operand.U8(0x88), y, x, e) // x0 x2 y0 y2 per 128 bits
		ctx.VSHUFPS(operand.U8(0xDD), y, x, o) // x1 x3 y1 y3
		ctx.VADDPS(o, e, dst)
	}
	pairs(a[0], a[1], b1)
	pairs(a[2], a[3], b2)
	pairs(b1, b2, b1)                           // 128-bit lane L: keys (0,2,4,6) or (1,3,5,7), lanes 4(L&1).. summed
	ctx.VSHUFF32X4(operand.U8(0xB1), b1, b1, e) // halves swapped
	ctx.VADDPS(e, b1, b1)
	ctx.VEXTRACTF32X4(operand.U8(2), b1, reg.X4)
	ctx.VUNPCKLPS(reg.X4, reg.X2, reg.X5)
	ctx.VUNPCKHPS(reg.X4, reg.X2, reg.X6)
	ctx.VMOVUPS(reg.X5, operand.Mem{Base: d})
	ctx.VMOVUPS(reg.X6, operand.Mem{Base: d, Disp: 16})
}

// tile emits attnTileZ<r>. Arguments: c (row i at c + i·ldc bytes), a
// (A[i][p] at a + i·lda + p·ldp bytes: ldp 4 for rows of A, 4·ld to read
// a row-major slab's columns as rows, which the backward's key gradients
// do instead of transposing their weights), b (row p at b + p·ldb bytes),
// k (the number of p). Accumulators Z0-Z23, B's vectors Z24-Z27, the
// broadcast A[i][p] Z28.
func tile(ctx *build.Context, r int) {
	name := fmt.Sprintf("attnTileZ%d", r)
	asmout.Kernel(ctx, name, "func(c *float32, ldc uintptr, a *float32, lda uintptr, ldp uintptr, b *float32, ldb uintptr, k int)")
	ctx.Doc(fmt.Sprintf("%s adds %d rows of Σ_p A[i][p]·B[p][:64] to C, p ascending.", name, r))
	k := ctx.Load(ctx.Param("k"), ctx.GP64())
	ctx.TESTQ(k, k)
	ctx.JZ(operand.LabelRef("none"))
	moveC(ctx, r, true)
	a := ctx.Load(ctx.Param("a"), ctx.GP64())
	lda := ctx.Load(ctx.Param("lda"), ctx.GP64())
	b := ctx.Load(ctx.Param("b"), ctx.GP64())
	ldb := ctx.Load(ctx.Param("ldb"), ctx.GP64())
	ldp := ctx.Load(ctx.Param("ldp"), ctx.GP64())
	ap := asmout.Pointers(ctx, a, lda, r)
	off := ctx.GP64()
	ctx.XORQ(off, off)
	ctx.Label("loop")
	for j := range 4 {
		ctx.VMOVUPS(operand.Mem{Base: b, Disp: 64 * j}, asmout.ZMM(24+j))
	}
	bc := asmout.ZMM(28)
	for i := range r {
		ctx.VBROADCASTSS(operand.Mem{Base: ap[i], Index: off, Scale: 1}, bc)
		for j := range 4 {
			ctx.VFMADD231PS(asmout.ZMM(24+j), bc, asmout.ZMM(4*i+j))
		}
	}
	ctx.ADDQ(ldp, off)
	ctx.ADDQ(ldb, b)
	ctx.DECQ(k)
	ctx.JNZ(operand.LabelRef("loop"))
	moveC(ctx, r, false)
	ctx.VZEROUPPER()
	ctx.Label("none")
	ctx.RET()
}

// moveC loads (or stores) the tile's accumulators from (to) C.
func moveC(ctx *build.Context, r int, load bool) {
	c := ctx.Load(ctx.Param("c"), ctx.GP64())
	ldc := ctx.Load(ctx.Param("ldc"), ctx.GP64())
	for i := range r {
		if i > 0 {
			ctx.ADDQ(ldc, c)
		}
		for j := range 4 {
			m := operand.Mem{Base: c, Disp: 64 * j}
			if load {
				ctx.VMOVUPS(m, asmout.ZMM(4*i+j))
			} else {
				ctx.VMOVUPS(asmout.ZMM(4*i+j), m)
			}
		}
	}
}
