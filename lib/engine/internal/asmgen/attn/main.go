// Command attn generates lib/engine/kernels_attn_amd64.s and its Go
// declarations: the AVX-512 register tiles of the engine's attention, and
// their AVX2 counterparts (avx2.go: attnTileY, attnDotsY, attnExpSum8) for
// CPUs without AVX-512 (see lib/engine/kernels_attn.go for the order every
// path keeps).
//
//   - attnDotsT<R>: groups of R queries' scores against a tile of 16 keys
//     stored transposed (element i of the 16 keys in one vector,
//     lib/engine/kernels_attn_avx512.go, packKeyTile): a lane is a key, so
//     attnDot's eight lane sums of 16 keys are eight accumulators (lane l
//     adds elements i ≡ l mod 8, ascending, one fused multiply-add each,
//     the query element broadcast from memory into the instruction), and
//     its tree is seven vertical adds: no shuffles at all.
//   - attnKeyTileT: 16 keys' rows into attnDotsT's transposed tile, 16
//     columns at a time by a 16×16 register transpose (unpacks of floats,
//     then of pairs, then two rounds of 128-bit lane shuffles).
//   - attnExpSum16: a row of softmax numerators (exp32 on sixteen lanes,
//     the constants in registers) and their float64 lane sums in one pass.
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

// Largest tiles: dotsTMax queries × eight lanes and tileMax rows × four
// vectors (24 accumulators each).
const (
	dotsTMax = 3
	tileMax  = 6
)

func main() { asmout.Main("attn", asmFile, stubFile, Generate) }

// Generate returns the assembly and the Go declarations.
func Generate() (asm, decl []byte, err error) {
	ctx := build.NewContext()
	for r := 1; r <= dotsTMax; r++ {
		dotsT(ctx, r)
	}
	for r := 1; r <= tileMax; r++ {
		tile(ctx, r)
	}
	keyTileT(ctx)
	expSum16(ctx)
	for r := 1; r <= rowDotsMax; r++ {
		rowDots(ctx, r)
	}
	for r := 1; r <= tileWMax; r++ {
		tileW(ctx, r, false)
	}
	for r := 1; r <= tileWMax; r++ {
		tileW(ctx, r, true)
	}
	for r := 1; r <= tileYMax; r++ {
		tileY(ctx, r)
	}
	for r := 1; r <= dotsYMax; r++ {
		dotsY(ctx, r)
	}
	laneIndexTable(ctx)
	expSum8(ctx)
	return asmout.Print(ctx, printer.Config{Argv: []string{"go", "run", "./internal/asmgen/attn"}, Pkg: "engine"})
}

// dotsT emits attnDotsT<r>. Arguments: d (query i's 16 scores go to
// d + i·ld bytes), q (query i's hd elements at q + i·qs bytes), k (the
// transposed tile: element e of key m at k + 4·(16e + m) bytes), hd (a
// multiple of 8), ng (≥ 1 groups of r queries, one after another: the
// next group's d and q follow r·ld and r·qs bytes on). Accumulators
// Z0-Z23 (query i, lane l: Z8i+l), the key vectors Z24-Z31.
func dotsT(ctx *build.Context, r int) {
	name := fmt.Sprintf("attnDotsT%d", r)
	asmout.Kernel(ctx, name, "func(d *float32, ld uintptr, q *float32, qs uintptr, k *float32, hd int, ng int)")
	ctx.Doc(fmt.Sprintf("%s stores %d queries' scores against 16 transposed keys, for ng groups of them.", name, r))
	acc := func(i, l int) reg.VecPhysical { return asmout.ZMM(8*i + l) }
	d := ctx.Load(ctx.Param("d"), ctx.GP64())
	ld := ctx.Load(ctx.Param("ld"), ctx.GP64())
	q := ctx.Load(ctx.Param("q"), ctx.GP64())
	qs := ctx.Load(ctx.Param("qs"), ctx.GP64())
	k := ctx.Load(ctx.Param("k"), ctx.GP64())
	n := ctx.Load(ctx.Param("hd"), ctx.GP64())
	ng := ctx.Load(ctx.Param("ng"), ctx.GP64())
	ctx.SHLQ(operand.U8(2), n) // bytes of a query
	ctx.Label("group")
	for i := range r {
		for l := range 8 {
			ctx.VPXORD(acc(i, l), acc(i, l), acc(i, l))
		}
	}
	// The query pointers advance one by one: an indexed memory operand
	// would split each fused multiply-add from its load (un-lamination
	// of three-operand instructions) and take two issue slots.
	qp := asmout.Pointers(ctx, q, qs, r)
	kp, kend := ctx.GP64(), ctx.GP64()
	ctx.MOVQ(k, kp)
	ctx.LEAQ(operand.Mem{Base: k, Index: n, Scale: 8}, kend) // the tile ends 16·hd floats on: k + 16·n bytes
	ctx.LEAQ(operand.Mem{Base: kend, Index: n, Scale: 8}, kend)
	ctx.Label("loop")
	for l := range 8 {
		kv := asmout.ZMM(24 + l)
		ctx.VMOVUPS(operand.Mem{Base: kp, Disp: 64 * l}, kv)
		for i := range r {
			ctx.VFMADD231PS_BCST(operand.Mem{Base: qp[i], Disp: 4 * l}, kv, acc(i, l))
		}
	}
	for i := range r {
		ctx.ADDQ(operand.U8(32), qp[i])
	}
	ctx.ADDQ(operand.U32(512), kp)
	ctx.CMPQ(kp, kend)
	ctx.JB(operand.LabelRef("loop"))
	dp := ctx.GP64()
	ctx.MOVQ(d, dp)
	for i := range r {
		if i > 0 {
			ctx.ADDQ(ld, dp)
		}
		tree8(ctx, [8]reg.VecPhysical{acc(i, 0), acc(i, 1), acc(i, 2), acc(i, 3), acc(i, 4), acc(i, 5), acc(i, 6), acc(i, 7)})
		ctx.VMOVUPS(acc(i, 0), operand.Mem{Base: dp})
	}
	for range r {
		ctx.ADDQ(ld, d)
		ctx.ADDQ(qs, q)
	}
	ctx.DECQ(ng)
	ctx.JNZ(operand.LabelRef("group"))
	ctx.VZEROUPPER()
	ctx.RET()
}

// tree8 leaves in s[0] attnDot's tree of the lane sums s[0..7],
// ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)), with vertical adds.
func tree8(ctx *build.Context, s [8]reg.VecPhysical) {
	for l := 0; l < 8; l += 2 {
		ctx.VADDPS(s[l+1], s[l], s[l])
	}
	ctx.VADDPS(s[2], s[0], s[0])
	ctx.VADDPS(s[6], s[4], s[4])
	ctx.VADDPS(s[4], s[0], s[0])
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
	moveC(ctx, r, 4, true)
	ap, b, ldb, ldp, off := tileArgs(ctx, r)
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
	moveC(ctx, r, 4, false)
	ctx.VZEROUPPER()
	ctx.Label("none")
	ctx.RET()
}

// tileArgs loads a tile's A, B and strides: A's r row pointers, B, ldb,
// ldp and the offset into A's rows, zero.
func tileArgs(ctx *build.Context, r int) (ap []reg.GPVirtual, b, ldb, ldp reg.Register, off reg.GPVirtual) {
	a := ctx.Load(ctx.Param("a"), ctx.GP64())
	lda := ctx.Load(ctx.Param("lda"), ctx.GP64())
	b = ctx.Load(ctx.Param("b"), ctx.GP64())
	ldb = ctx.Load(ctx.Param("ldb"), ctx.GP64())
	ldp = ctx.Load(ctx.Param("ldp"), ctx.GP64())
	ap = asmout.Pointers(ctx, a, lda, r)
	off = ctx.GP64()
	ctx.XORQ(off, off)
	return ap, b, ldb, ldp, off
}

// moveC loads (or stores) the tile's accumulators, r rows of vecs
// vectors (Z(vecs·i+j)), from (to) C.
func moveC(ctx *build.Context, r, vecs int, load bool) {
	c := ctx.Load(ctx.Param("c"), ctx.GP64())
	ldc := ctx.Load(ctx.Param("ldc"), ctx.GP64())
	for i := range r {
		if i > 0 {
			ctx.ADDQ(ldc, c)
		}
		for j := range vecs {
			m := operand.Mem{Base: c, Disp: 64 * j}
			if load {
				ctx.VMOVUPS(m, asmout.ZMM(vecs*i+j))
			} else {
				ctx.VMOVUPS(asmout.ZMM(vecs*i+j), m)
			}
		}
	}
}

// keyTileT emits attnKeyTileT. Arguments: dst (element e of key m goes
// to dst + 4·(16e + m) bytes), src (key m's element e at src + m·stride +
// 4e bytes), stride, nb (blocks of 16 elements, ≥ 1). Rows Z0-Z15,
// temporaries Z16-Z31 (transpose16).
func keyTileT(ctx *build.Context) {
	asmout.Kernel(ctx, "attnKeyTileT", "func(dst *float32, src *float32, stride uintptr, nb int)")
	ctx.Doc("attnKeyTileT transposes nb blocks of 16 elements of 16 keys into a score tile.")
	dst := ctx.Load(ctx.Param("dst"), ctx.GP64())
	src := ctx.Load(ctx.Param("src"), ctx.GP64())
	st := ctx.Load(ctx.Param("stride"), ctx.GP64())
	nb := ctx.Load(ctx.Param("nb"), ctx.GP64())
	st3 := ctx.GP64()
	ctx.LEAQ(operand.Mem{Base: st, Index: st, Scale: 2}, st3)
	st4 := ctx.GP64()
	ctx.MOVQ(st, st4)
	ctx.SHLQ(operand.U8(2), st4)
	ctx.Label("block")
	base := ctx.GP64()
	ctx.MOVQ(src, base)
	z := asmout.ZMM
	for q := range 4 { // rows 4q..4q+3
		if q > 0 {
			ctx.ADDQ(st4, base)
		}
		ctx.VMOVUPS(operand.Mem{Base: base}, z(4*q))
		ctx.VMOVUPS(operand.Mem{Base: base, Index: st, Scale: 1}, z(4*q+1))
		ctx.VMOVUPS(operand.Mem{Base: base, Index: st, Scale: 2}, z(4*q+2))
		ctx.VMOVUPS(operand.Mem{Base: base, Index: st3, Scale: 1}, z(4*q+3))
	}
	transpose16(ctx)
	for e := range 16 {
		ctx.VMOVUPS(z(e), operand.Mem{Base: dst, Disp: 64 * e})
	}
	ctx.ADDQ(operand.U8(64), src)
	ctx.ADDQ(operand.U32(1024), dst)
	ctx.DECQ(nb)
	ctx.JNZ(operand.LabelRef("block"))
	ctx.VZEROUPPER()
	ctx.RET()
}

// transpose16 transposes rows Z0-Z15 in place (Ze then holds element e
// of every row), with Z16-Z31 as temporaries. Unpacking rows 2k, 2k+1 by
// floats, then those by pairs, leaves u[4k+m] holding, in 128-bit lane L,
// element 4L+m of rows 4k..4k+3; two rounds of lane shuffles gather each
// element's four lanes.
func transpose16(ctx *build.Context) {
	z := asmout.ZMM
	t := func(i int) reg.VecPhysical { return z(16 + i) }
	for k := range 8 { // t[2k], t[2k+1]: rows 2k, 2k+1 interleaved
		ctx.VUNPCKLPS(z(2*k+1), z(2*k), t(2*k))
		ctx.VUNPCKHPS(z(2*k+1), z(2*k), t(2*k+1))
	}
	for k := range 4 { // u in Z0-Z15
		a, b, c, d := t(4*k), t(4*k+1), t(4*k+2), t(4*k+3)
		ctx.VUNPCKLPD(c, a, z(4*k))
		ctx.VUNPCKHPD(c, a, z(4*k+1))
		ctx.VUNPCKLPD(d, b, z(4*k+2))
		ctx.VUNPCKHPD(d, b, z(4*k+3))
	}
	for m := range 4 { // v[m][h] in t(4m+h): lanes of u[m], u[4+m] or u[8+m], u[12+m]
		ctx.VSHUFF32X4(operand.U8(0x44), z(4+m), z(m), t(4*m))
		ctx.VSHUFF32X4(operand.U8(0xEE), z(4+m), z(m), t(4*m+1))
		ctx.VSHUFF32X4(operand.U8(0x44), z(12+m), z(8+m), t(4*m+2))
		ctx.VSHUFF32X4(operand.U8(0xEE), z(12+m), z(8+m), t(4*m+3))
	}
	for m := range 4 { // element 4L+m into Z(4L+m), then moved up
		ctx.VSHUFF32X4(operand.U8(0x88), t(4*m+2), t(4*m), z(m))
		ctx.VSHUFF32X4(operand.U8(0xDD), t(4*m+2), t(4*m), z(4+m))
		ctx.VSHUFF32X4(operand.U8(0x88), t(4*m+3), t(4*m+1), z(8+m))
		ctx.VSHUFF32X4(operand.U8(0xDD), t(4*m+3), t(4*m+1), z(12+m))
	}
}
