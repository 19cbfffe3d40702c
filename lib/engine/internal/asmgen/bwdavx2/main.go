// Command bwdavx2 generates lib/engine/gemm_bwd_avx2_amd64.s, the AVX2
// register tiles of the backward products matMulT (the input gradient
// Wᵀ·dy) and outerAcc (a weight gradient Σ dy ⊗ x) for CPUs with AVX2 and
// FMA3 but without AVX-512 (the AVX-512 tiles come from ../bwd), the
// panel copies they read, their Go declarations and the tables that index
// them by tile shape. Run it through go generate in lib/engine.
//
// Every tile computes C[i][j] += Σ_p A(i,p)·B[p][j] for R rows i and V
// 8-lane vectors of columns j, summing p in ascending order with one fused multiply-add
// (VFMADD231PS) per term: each lane performs exactly the scalar kernels'
// operations (fma32), so the results have the same bits as every other
// path. AVX2 has 16 YMM registers: R·V accumulators, V vectors of B and
// one broadcast of A(i,p), so 4 × 3 (12 FMAs per 3 loads of B and 4
// broadcasts) or 6 × 2; Go's compiler keeps loop-carried vectors in 15
// registers and loads archsimd slices with bounds checks, which held the
// archsimd loops at 13-24% of the FMA peak.
package main

import (
	"bytes"
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/printer"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// Outputs, relative to lib/engine (where go generate runs this).
const (
	asmFile   = "gemm_bwd_avx2_amd64.s"
	stubFile  = "gemm_bwd_avx2_stubs_amd64.go"
	tableFile = "gemm_bwd_avx2_tables_amd64.go"
)

// rmax is the tallest tile of matMulT for V = 1..3 vectors: R·V + V + 1
// registers of 16, and at most 8 rows (one pointer register each).
var rmax = [4]int{0, 8, 6, 4}

// colsRmax is the tallest tile of outerAcc, whose A(i,p) = us[p][o+i]
// lie in one row (one pointer): 12 rows of one vector.
var colsRmax = [4]int{0, 12, 6, 4}

// The Go signatures: n is the lanes (1-8) of the last vector of each row
// that exist; the others are neither read from C nor written.
const (
	tileSig  = "func(c *float32, ldc uintptr, a *float32, lda uintptr, b *float32, ldb uintptr, k int, n int)"
	copySig  = "func(dst *float32, src *float32, lds uintptr, rows int, n int)"
	widenSig = "func(dst *float32, ldd uintptr, src *uint16, lds uintptr, rows int)"
)

func main() {
	asm, stubs, tables, err := Generate()
	if err != nil {
		asmout.Fail("bwdavx2", err)
	}
	asmout.Write("bwdavx2", map[string][]byte{asmFile: asm, stubFile: stubs, tableFile: tables})
}

// Generate returns the assembly, its Go declarations and the tables.
func Generate() (asm, stubs, tables []byte, err error) {
	ctx := build.NewContext()
	laneMaskTable(ctx)
	for _, zero := range []bool{false, true} {
		for v := 1; v <= 3; v++ {
			for r := 1; r <= rmax[v]; r++ {
				tile(ctx, r, v, zero, false)
			}
		}
	}
	for _, zero := range []bool{false, true} {
		tile(ctx, 4, 3, zero, true)
	}
	for v := 1; v <= 3; v++ {
		for r := 1; r <= colsRmax[v]; r++ {
			colsTile(ctx, r, v)
		}
	}
	for v := 1; v <= 3; v++ {
		copyRows(ctx, v)
	}
	for v := 1; v <= 3; v++ {
		widenRows(ctx, v)
	}
	asm, stubs, err = asmout.Print(ctx, printer.Config{Name: "lib/engine/internal/asmgen/bwdavx2", Pkg: "engine"})
	if err != nil {
		return nil, nil, nil, err
	}
	return asm, stubs, tableText(), nil
}

// ymm is Y0..Y15 by number.
func ymm(i int) reg.VecPhysical {
	return []reg.VecPhysical{
		reg.Y0, reg.Y1, reg.Y2, reg.Y3, reg.Y4, reg.Y5, reg.Y6, reg.Y7,
		reg.Y8, reg.Y9, reg.Y10, reg.Y11, reg.Y12, reg.Y13, reg.Y14, reg.Y15,
	}[i]
}

// tileName names the R×V tile: Z starts from zero, P prefetches the next
// tile's rows.
func tileName(r, v int, zero, pf bool) string {
	s := fmt.Sprintf("bwd2R%dx%d", r, v)
	if zero {
		s += "Z"
	}
	if pf {
		s += "P"
	}
	return s
}

func colsName(r, v int) string { return fmt.Sprintf("bwd2C%dx%d", r, v) }

// laneMask is eight int32 -1s then eight 0s: the 8 values from
// 4·(8-n) bytes in are the VMASKMOVPS mask of n lanes.
var laneMask operand.Mem

func laneMaskTable(ctx *build.Context) {
	laneMask = ctx.StaticGlobal("bwd2LaneMask")
	ctx.DataAttributes(attr.RODATA | attr.NOPTR)
	for i := range 16 {
		v := uint32(0)
		if i < 8 {
			v = 0xffffffff
		}
		ctx.AddDatum(4*i, operand.U32(v))
	}
}

// loadMask puts the mask of the parameter n's lanes into y.
func loadMask(ctx *build.Context, y reg.VecPhysical) {
	n := ctx.Load(ctx.Param("n"), ctx.GP64())
	t := ctx.GP64()
	ctx.LEAQ(laneMask, t)
	ctx.NEGQ(n)
	ctx.VMOVDQU(operand.Mem{Base: t, Index: n, Scale: 4, Disp: 32}, y)
}

// tile emits one R×V tile; with zero it starts its accumulators at +0
// (what a cleared C would have given) instead of loading C. B's rows are
// whole vectors: a panel padded with zeros, or columns that exist. With pf
// it also asks for the next tile's rows of C and A (prefetchC,
// stepsPrefetch).
func tile(ctx *build.Context, r, v int, zero, pf bool) {
	name := tileName(r, v, zero, pf)
	asmout.Kernel(ctx, name, tileSig)
	verb, prep := "adds", "to"
	if zero {
		verb, prep = "stores", "into"
	}
	ctx.Doc(fmt.Sprintf("%s %s %d rows × %d vectors of Σ_p A(i,p)·B[p][j] %s C, p ascending.", name, verb, r, v, prep))
	acc, bv := tileRegs(r, v)
	// B's first register holds the mask while C moves: the loop needs
	// every register the 4 × 3 tile has.
	if zero {
		for _, row := range acc {
			for _, y := range row {
				ctx.VXORPS(y, y, y)
			}
		}
	} else {
		loadMask(ctx, bv[0])
		moveC(ctx, acc, bv[0], true)
	}
	if pf {
		prefetchC(ctx, r, v)
		stepsPrefetch(ctx, acc, bv, ymm(r*v+v))
	} else {
		steps(ctx, acc, bv, ymm(r*v+v), false)
	}
	storeC(ctx, acc, bv[0])
}

// prefetchC asks for the next tile's R rows of C (the R rows below, every
// line of its V vectors) before the loop, so that they come from L2 rather
// than L3 or memory when that tile starts. Past the batch's last tile the
// addresses are another panel's or nobody's: a prefetch never faults.
func prefetchC(ctx *build.Context, r, v int) {
	c := ctx.Load(ctx.Param("c"), ctx.GP64())
	ldc := ctx.Load(ctx.Param("ldc"), ctx.GP64())
	lines := []int{0, 32*v - 4}
	if v == 3 {
		lines = []int{0, 64, 32*v - 4}
	}
	for range r {
		ctx.ADDQ(ldc, c)
	}
	for i := range r {
		if i > 0 {
			ctx.ADDQ(ldc, c)
		}
		for _, d := range lines {
			ctx.PREFETCHT0(operand.Mem{Base: c, Disp: d})
		}
	}
}

// colsTile emits outerAcc's R×V tile: C[i][j] += Σ_p us[p][o+i]·vs[p][j],
// A(i,p) at a + p·lda + 4i, B's rows (vs's, or a packed strip) ldb apart.
func colsTile(ctx *build.Context, r, v int) {
	name := colsName(r, v)
	asmout.Kernel(ctx, name, tileSig)
	ctx.Doc(fmt.Sprintf("%s adds %d rows × %d vectors of Σ_p A(p,i)·B[p][j] to C, p ascending.", name, r, v))
	acc, bv := tileRegs(r, v)
	loadMask(ctx, bv[0])
	moveC(ctx, acc, bv[0], true)
	steps(ctx, acc, bv, ymm(r*v+v), true)
	storeC(ctx, acc, bv[0])
}

// tileRegs names a tile's accumulators (Y0 up) and B vectors (after them).
func tileRegs(r, v int) (acc [][]reg.VecPhysical, bv []reg.VecPhysical) {
	acc = make([][]reg.VecPhysical, r)
	for i := range acc {
		acc[i] = make([]reg.VecPhysical, v)
		for j := range acc[i] {
			acc[i][j] = ymm(i*v + j)
		}
	}
	bv = make([]reg.VecPhysical, v)
	for j := range bv {
		bv[j] = ymm(r*v + j)
	}
	return acc, bv
}

// steps emits the loop that adds A(i,p)·B[p][j] to the accumulators for
// p = 0..k-1. A(i,p) is broadcast once into bc and meets the V vectors of
// B there (AVX2's FMAs take no broadcast operand). Without cols A(i,p)
// lies in row i of A (matMulT's); with cols, in one row of A for each p
// (outerAcc's).
func steps(ctx *build.Context, acc [][]reg.VecPhysical, bv []reg.VecPhysical, bc reg.VecPhysical, cols bool) {
	a := ctx.Load(ctx.Param("a"), ctx.GP64())
	lda := ctx.Load(ctx.Param("lda"), ctx.GP64())
	b := ctx.Load(ctx.Param("b"), ctx.GP64())
	ldb := ctx.Load(ctx.Param("ldb"), ctx.GP64())
	k := ctx.Load(ctx.Param("k"), ctx.GP64())
	aAt := func(i int) operand.Mem { return operand.Mem{Base: a, Disp: 4 * i} }
	var off reg.GPVirtual
	if !cols {
		off = ctx.GP64()
		ctx.XORQ(off, off)
		ptrs := asmout.Pointers(ctx, a, lda, len(acc))
		aAt = func(i int) operand.Mem { return operand.Mem{Base: ptrs[i], Index: off, Scale: 1} }
	}
	ctx.TESTQ(k, k)
	ctx.JZ(operand.LabelRef("done"))
	ctx.Label("loop")
	for j, y := range bv {
		ctx.VMOVUPS(operand.Mem{Base: b, Disp: 32 * j}, y)
	}
	for i, row := range acc {
		ctx.VBROADCASTSS(aAt(i), bc)
		for j, y := range bv {
			ctx.VFMADD231PS(y, bc, row[j])
		}
	}
	if cols {
		ctx.ADDQ(lda, a)
	} else {
		ctx.ADDQ(operand.U8(4), off)
	}
	ctx.ADDQ(ldb, b)
	ctx.DECQ(k)
	ctx.JNZ(operand.LabelRef("loop"))
	ctx.Label("done")
}

// stepsPrefetch is steps for matMulT's tiles of at most 4 rows, four steps
// a pass, step u also touching row u of the next tile's A (the R rows
// below) at the current offset: every line the next tile reads is asked
// for about one tile ahead, four times (one of them misses). A last k mod
// 4 steps run without.
func stepsPrefetch(ctx *build.Context, acc [][]reg.VecPhysical, bv []reg.VecPhysical, bc reg.VecPhysical) {
	a := ctx.Load(ctx.Param("a"), ctx.GP64())
	lda := ctx.Load(ctx.Param("lda"), ctx.GP64())
	b := ctx.Load(ctx.Param("b"), ctx.GP64())
	ldb := ctx.Load(ctx.Param("ldb"), ctx.GP64())
	k := ctx.Load(ctx.Param("k"), ctx.GP64())
	off := ctx.GP64()
	ctx.XORQ(off, off)
	r := len(acc)
	ptrs := asmout.Pointers(ctx, a, lda, r)
	next := ctx.GP64()
	ctx.LEAQ(operand.Mem{Base: ptrs[r-1], Index: lda, Scale: 1}, next)
	nx := asmout.Pointers(ctx, next, lda, r)
	step := func() {
		for j, y := range bv {
			ctx.VMOVUPS(operand.Mem{Base: b, Disp: 32 * j}, y)
		}
		for i, row := range acc {
			ctx.VBROADCASTSS(operand.Mem{Base: ptrs[i], Index: off, Scale: 1}, bc)
			for j, y := range bv {
				ctx.VFMADD231PS(y, bc, row[j])
			}
		}
		ctx.ADDQ(operand.U8(4), off)
		ctx.ADDQ(ldb, b)
	}
	ctx.CMPQ(k, operand.U8(4))
	ctx.JB(operand.LabelRef("tail"))
	ctx.Label("loop4")
	for u := range 4 {
		ctx.PREFETCHT0(operand.Mem{Base: nx[u%r], Index: off, Scale: 1})
		step()
	}
	ctx.SUBQ(operand.U8(4), k)
	ctx.CMPQ(k, operand.U8(4))
	ctx.JAE(operand.LabelRef("loop4"))
	ctx.Label("tail")
	ctx.TESTQ(k, k)
	ctx.JZ(operand.LabelRef("done"))
	ctx.Label("loop")
	step()
	ctx.DECQ(k)
	ctx.JNZ(operand.LabelRef("loop"))
	ctx.Label("done")
}

// storeC ends a tile: the accumulators back to C under the last
// vector's lane mask (loaded into y), then VZEROUPPER and RET.
func storeC(ctx *build.Context, acc [][]reg.VecPhysical, y reg.VecPhysical) {
	loadMask(ctx, y)
	moveC(ctx, acc, y, false)
	ctx.VZEROUPPER()
	ctx.RET()
}

// moveC loads (or stores) the accumulators from (to) C, the last vector of
// each row through mask.
func moveC(ctx *build.Context, acc [][]reg.VecPhysical, mask reg.VecPhysical, load bool) {
	c := ctx.Load(ctx.Param("c"), ctx.GP64())
	ldc := ctx.Load(ctx.Param("ldc"), ctx.GP64())
	for i, row := range acc {
		if i > 0 {
			ctx.ADDQ(ldc, c)
		}
		for j, y := range row {
			m := operand.Mem{Base: c, Disp: 32 * j}
			last := j == len(row)-1
			switch {
			case load && last:
				ctx.VMASKMOVPS(m, mask, y)
			case load:
				ctx.VMOVUPS(m, y)
			case last:
				ctx.VMASKMOVPS(y, mask, m)
			default:
				ctx.VMOVUPS(y, m)
			}
		}
	}
}

// copyRows emits bwd2Copy<v>, which copies rows of v vectors (the last
// one's n lanes), lds bytes apart, into dst as contiguous rows of 8·v
// float32s, the lanes past n zero: the panel the tiles read.
func copyRows(ctx *build.Context, v int) {
	name := fmt.Sprintf("bwd2Copy%d", v)
	asmout.Kernel(ctx, name, copySig)
	ctx.Doc(fmt.Sprintf("%s packs rows of %d vectors into a contiguous zero-padded float32 panel.", name, v))
	mask := ymm(15)
	loadMask(ctx, mask)
	dst := ctx.Load(ctx.Param("dst"), ctx.GP64())
	src := ctx.Load(ctx.Param("src"), ctx.GP64())
	lds := ctx.Load(ctx.Param("lds"), ctx.GP64())
	rows := ctx.Load(ctx.Param("rows"), ctx.GP64())
	ctx.TESTQ(rows, rows)
	ctx.JZ(operand.LabelRef("done"))
	ctx.Label("loop")
	for j := range v {
		m := operand.Mem{Base: src, Disp: 32 * j}
		if j == v-1 {
			ctx.VMASKMOVPS(m, mask, ymm(j))
		} else {
			ctx.VMOVUPS(m, ymm(j))
		}
		ctx.VMOVUPS(ymm(j), operand.Mem{Base: dst, Disp: 32 * j})
	}
	ctx.ADDQ(lds, src)
	ctx.ADDQ(operand.U32(32*v), dst)
	ctx.DECQ(rows)
	ctx.JNZ(operand.LabelRef("loop"))
	ctx.Label("done")
	ctx.VZEROUPPER()
	ctx.RET()
}

// widenRows emits bwd2Widen<v>, which widens rows of v whole vectors of
// bfloat16 (lds bytes apart) exactly into float32 rows ldd bytes apart in
// dst: each value's bits become a float32's upper half. AVX2 has no 16-bit
// masked load: the caller widens a last partial vector itself.
func widenRows(ctx *build.Context, v int) {
	name := fmt.Sprintf("bwd2Widen%d", v)
	asmout.Kernel(ctx, name, widenSig)
	ctx.Doc(fmt.Sprintf("%s widens rows of %d vectors of bfloat16 into float32 rows of a panel.", name, v))
	dst := ctx.Load(ctx.Param("dst"), ctx.GP64())
	ldd := ctx.Load(ctx.Param("ldd"), ctx.GP64())
	src := ctx.Load(ctx.Param("src"), ctx.GP64())
	lds := ctx.Load(ctx.Param("lds"), ctx.GP64())
	rows := ctx.Load(ctx.Param("rows"), ctx.GP64())
	ctx.TESTQ(rows, rows)
	ctx.JZ(operand.LabelRef("done"))
	ctx.Label("loop")
	for j := range v {
		ctx.VPMOVZXWD(operand.Mem{Base: src, Disp: 16 * j}, ymm(j))
		ctx.VPSLLD(operand.U8(16), ymm(j), ymm(j))
		ctx.VMOVUPS(ymm(j), operand.Mem{Base: dst, Disp: 32 * j})
	}
	ctx.ADDQ(lds, src)
	ctx.ADDQ(ldd, dst)
	ctx.DECQ(rows)
	ctx.JNZ(operand.LabelRef("loop"))
	ctx.Label("done")
	ctx.VZEROUPPER()
	ctx.RET()
}

// tableText indexes the tiles as table[V-1][R-1] and the copies by V-1.
func tableText() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by lib/engine/internal/asmgen/bwdavx2. DO NOT EDIT.\n\npackage engine\n")
	for _, zero := range []bool{false, true} {
		name := map[bool]string{false: "bwd2Rows", true: "bwd2RowsZ"}[zero]
		fmt.Fprintf(&b, "\nvar %s = [3][]bwd2Kernel{\n", name)
		for v := 1; v <= 3; v++ {
			b.WriteString("\t{")
			for r := 1; r <= rmax[v]; r++ {
				if r > 1 {
					b.WriteString(", ")
				}
				b.WriteString(tileName(r, v, zero, false))
			}
			b.WriteString("},\n")
		}
		b.WriteString("}\n")
	}
	b.WriteString("\nvar bwd2Cols = [3][]bwd2Kernel{\n")
	for v := 1; v <= 3; v++ {
		b.WriteString("\t{")
		for r := 1; r <= colsRmax[v]; r++ {
			if r > 1 {
				b.WriteString(", ")
			}
			b.WriteString(colsName(r, v))
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	b.WriteString("\nvar bwd2Copy = [3]bwd2CopyFunc{bwd2Copy1, bwd2Copy2, bwd2Copy3}\n")
	b.WriteString("\nvar bwd2Widen = [3]bwd2WidenFunc{bwd2Widen1, bwd2Widen2, bwd2Widen3}\n")
	return b.Bytes()
}
