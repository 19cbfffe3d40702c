package engine

import (
	"sync"

	"github.com/tinkershell/tinker/lib/cpufeat"
)

// bwdAsm reports whether this CPU runs the AVX-512 tiles.
var bwdAsm = cpufeat.AVX512()

// The tiles' Go types (gemm_bwd_stubs_amd64.go declares them, the tables
// index them as [W-1][R-1]) and the strip packers'.
type (
	bwdKernel         = func(c *float32, ldc uintptr, a *float32, lda uintptr, b *float32, ldb uintptr, k int, mask uint16)
	bwdPackKernel     = func(c *float32, ldc uintptr, a *float32, lda uintptr, b *float32, ldb uintptr, k int, mask uint16, dst *float32)
	bwdPackKernelBF16 = func(c *float32, ldc uintptr, a *float32, lda uintptr, b *uint16, ldb uintptr, k int, mask uint16, dst *float32)
	bwdKernel2        = func(c *float32, ldc uintptr, a *float32, lda uintptr, b *float32, ldb uintptr, k int, mask uint16, a2 *float32, lda2 uintptr, b2 *float32, ldb2 uintptr, k2 int)
	bwdCopyFunc       = func(dst *float32, src *float32, lds uintptr, rows int, mask uint16)
	bwdWidenFunc      = func(dst *float32, src *uint16, lds uintptr, rows int, mask uint16)
)

// rowsRmax, colsRmax and colsTRmax are the tallest tiles for W = 1..4
// (index 0 unused), read where used: package-level arrays of the tables'
// lengths were code run at every start of every program linking the engine.
func rowsRmax() [5]int  { return tallest(&bwdRowsF32) }
func colsRmax() [5]int  { return tallest(&bwdCols) }
func colsTRmax() [5]int { return tallest(&bwdColsT) }

func tallest(t *[4][]bwdKernel) [5]int {
	return [5]int{0, len(t[0]), len(t[1]), len(t[2]), len(t[3])}
}

// matMulTAsm adds Σ_t W_tᵀ·ys_t[b] to xs[b] (stores it when the first
// term has zero) for each term t in turn with the assembly tiles and
// reports whether it could (the rows of every ys_t and of xs must each be
// evenly spaced), having written nothing when not. Rows of each W are
// added in ascending order, a block (kcRows) at a time, term after term,
// so every element's sum is the scalar kernels' (matMulT of each term in
// turn).
func matMulTAsm(terms []tTerm, xs [][]float32) bool {
	lx, work, ok := tTermsStrided(terms, xs)
	if !ok {
		return false
	}
	m, cols := len(terms[0].ys), terms[0].w.cols
	vecs := (cols + 15) / 16
	wv := tileShape(m, vecs, rowsRmax(), 8) // see outerTileFloor
	if cols <= tCols {
		// Too narrow to split by columns: split the batch in whole tiles.
		parallelFor(m, rowsRmax()[wv], work, func(lo, hi int) {
			tMulAsm(terms, xs, lx, wv, lo, hi, 0, cols)
		})
		return true
	}
	// Column blocks as pieces the cores take in turn: two fixed halves
	// left one core waiting whenever the other got less CPU time.
	parallelPieces(cols, tMulWidth(wv), work, func(lo, hi int) {
		tMulAsm(terms, xs, lx, wv, 0, m, lo, hi)
	})
	return true
}

// tMulWidth is the width of tMulAsm's column blocks for tiles of wv
// vectors: tCols rounded down to whole panels.
func tMulWidth(wv int) int { return 16 * wv * max(1, tCols/(16*wv)) }

// stripPool holds the packed panels, one per running tMulAsm; outerPool
// outerAsm's.
var (
	stripPool = sync.Pool{New: func() any { return new([]float32) }}
	outerPool = sync.Pool{New: func() any { return new([]float32) }}
)

// kcAsm is the number of weight rows a packed panel holds: 1024 rows ×
// 64 columns (256 KiB) stay in L2 while every tile of the batch reads
// them, each tile summing 1024 rows between a load and a store of its
// accumulators. A 128-row strip in L1 (32 KiB) made the tiles reload and
// store their accumulators every 128 rows, from an xs block that at 512
// tokens no longer fits L2 without conflicts: matMulT at 512 tokens took
// 0.8× the time with 1024 (paired single-thread runs, loaded machine;
// 512 and 2048 were no better; at 128 tokens no different). A panel in
// L2 feeds the tiles as fast as a strip in L1 (BenchmarkBackwardPanel).
const kcAsm = 1024

// kcWhole is the most weight rows a term sums in one block (kcRows): a
// term of up to this many rows (q_proj's 2048, gate's and up's 3072 on
// Qwen3-0.6B) is one panel of up to 768 KiB, still in L2, so that each tile
// loads and stores its part of xs once instead of once per kcAsm rows,
// each time from L3 at 512 tokens. Taller terms (an output layer's
// vocabulary) take blocks of kcAsm.
var kcWhole = 3072

// kcRows is the block of weight rows tMulCols takes for a term of rows
// rows.
func kcRows(rows int) int {
	if rows <= kcWhole {
		return max(rows, 1)
	}
	return kcAsm
}

// tMulAsm does vectors [b0, b1) × columns [c0, c1) of matMulTAsm, a
// block of columns at a time so that its part of xs stays in L2 while
// every weight row of every term meets it.
func tMulAsm(terms []tTerm, xs [][]float32, lx, wv, b0, b1, c0, c1 int) {
	var buf, buf2 []float32
	pack, rows := b1-b0 > rowsRmax()[wv], 0
	for _, t := range terms {
		pack, rows = pack || t.w.bf != nil, max(rows, kcRows(t.w.rows))
	}
	var fold *tTerm // a LoRA A's rows, summed in the base term's tiles
	if t := &terms[len(terms)-1]; len(terms) == 2 && b1-b0 > rowsRmax()[wv] && foldable(*t) && terms[0].w.cols > 16*wv {
		fold = t
	}
	if pack {
		sp := stripPool.Get().(*[]float32)
		defer stripPool.Put(sp)
		n := rows * 16 * wv
		*sp = growTo(*sp, n+foldRows*16*wv)
		buf, buf2 = (*sp)[:n], (*sp)[n:]
	}
	width := tMulWidth(wv)
	for cb := c0; cb < c1; cb += width {
		for i, t := range terms {
			tb := buf // a float32 term under one tile reads W in place
			if t.w.bf == nil && (b1-b0 <= rowsRmax()[wv] || t.w.cols <= 16*wv) {
				// So does one whose rows are its panel's (a LoRA B's):
				// they lie one after another, in no conflict.
				tb = nil
			}
			if fold != nil && i == 1 {
				break // summed with term 0
			}
			tMulCols(t, xs, lx, wv, b0, b1, cb, min(cb+width, c1), tb, fold, buf2)
		}
	}
}

// foldRows is the most rows of a second term (a LoRA A: rank rows) that
// tMulAsm sums in the first term's tiles (bwdRows2) instead of tiles of
// its own.
const foldRows = 64

// foldable reports whether tMulAsm can sum t in the base term's tiles: a
// float32 matrix of at most foldRows rows.
func foldable(t tTerm) bool { return t.w.bf == nil && t.w.rows <= foldRows }

// tMulCols does term t's part of columns [cb, ce) for each block of
// kcRows weight rows: panels of wv vectors, tiles of the batch. With t2
// (and buf packing the panels), the last block's tiles go on to t2's rows
// (tMulFold). With t.zero the first block's tiles start from zero.
func tMulCols(t tTerm, xs [][]float32, lx, wv, b0, b1, cb, ce int, buf []float32, t2 *tTerm, buf2 []float32) {
	w, ys, ly, r, kb := t.w, t.ys, t.ly, rowsRmax()[wv], kcRows(t.w.rows)
	for j0 := 0; j0 < w.rows; j0 += kb {
		kc, zero := min(kb, w.rows-j0), t.zero && j0 == 0
		tiles := bwdRowsF32
		if zero {
			tiles = bwdRowsZ
		}
		for c := cb; c < ce; c += 16 * wv {
			n := min(16*wv, ce-c)
			v, mask := (n+15)/16, lastMask(n)
			bp, ldb, b := tMulPanel(w, ys, xs, ly, lx, b0, b1, j0, kc, c, v, mask, buf, zero)
			if t2 != nil && buf != nil && j0+kc == w.rows {
				p := tPanel{bp, ldb, j0, kc, c, v, mask, zero}
				tMulFold(p, *t2, ys, xs, ly, lx, r, b0, b, b1, buf2)
				continue
			}
			for ; b < b1; b += r {
				tr := min(r, b1-b)
				tiles[v-1][tr-1](&xs[b][c], uintptr(4*lx), &ys[b][j0], uintptr(4*ly), bp, ldb, kc, mask)
			}
		}
	}
}

// tPanel is a packed panel of the base term: its data and row stride, its
// weight rows [j0, j0+kc), first column c, vectors v and last mask, and
// whether its tiles start from zero.
type tPanel struct {
	b      *float32
	ldb    uintptr
	j0, kc int
	c, v   int
	mask   uint16
	zero   bool
}

// tMulFold runs the tiles of the batch's rows [b, b1) over the base
// term's last panel p and then t2's rows (a LoRA A's, copied into buf2)
// before storing each tile: t2's own tiles loaded and stored C, by then
// out of L2 at 512 tokens, every 32 steps, and cost about twice the base
// term per FLOP. Rows [b0, b), which the packing tile did, get t2 in a
// tile of their own.
func tMulFold(p tPanel, t2 tTerm, ys, xs [][]float32, ly, lx, r, b0, b, b1 int, buf2 []float32) {
	v, c := p.v, p.c
	bwdCopy[v-1](&buf2[0], &t2.w.data[c], uintptr(4*t2.w.cols), t2.w.rows, p.mask)
	b2, ldb2, k2, ld2 := &buf2[0], uintptr(64*v), t2.w.rows, uintptr(4*t2.ly)
	if b > b0 {
		bwdRowsF32[v-1][b-b0-1](&xs[b0][c], uintptr(4*lx), &t2.ys[b0][0], ld2, b2, ldb2, k2, p.mask)
	}
	tiles := bwdRows2
	if p.zero {
		tiles = bwdRows2Z
	}
	for ; b < b1; b += r {
		tr := min(r, b1-b)
		tiles[v-1][tr-1](&xs[b][c], uintptr(4*lx), &ys[b][p.j0], uintptr(4*ly), p.b, p.ldb, p.kc, p.mask, &t2.ys[b][0], ld2, b2, ldb2, k2)
	}
}

// tMulPanel readies the panel of W's rows [j0, j0+kc) × v vectors from
// column c for the tiles of the batch's rows [b0, b1) and returns it and
// the first row that still needs a tile. Without buf the tiles read W in
// place. With it the panel is packed contiguous in buf (widened when
// bfloat16): W's rows often lie 4 KiB apart, which maps a panel's rows to
// a few cache sets, in L1 and in L2. The first tile packs it as it reads
// it (bwdPackF32, bwdPackBF16), its reads of W, from L3, overlapping its
// multiply-adds: a separate pack before the tiles was a sixth of
// matMulT's time at 128 tokens, and the fused one took 0.93-0.96× the
// time there (paired, loaded machine; the same at 512 tokens).
func tMulPanel(w mat, ys, xs [][]float32, ly, lx, b0, b1, j0, kc, c, v int, mask uint16, buf []float32, zero bool) (*float32, uintptr, int) {
	if buf == nil {
		return &w.data[j0*w.cols+c], uintptr(4 * w.cols), b0
	}
	bp, ldb := &buf[0], uintptr(64*v)
	if b1-b0 < bwdPackR {
		// Only bfloat16 weights take a panel for so few rows.
		bwdWiden[v-1](bp, &w.bf[j0*w.cols+c], uintptr(2*w.cols), kc, mask)
		return bp, ldb, b0
	}
	cx, cy := &xs[b0][c], &ys[b0][j0]
	packBF, packF := bwdPackBF16, bwdPackF32
	if zero {
		packBF, packF = bwdPackBF16Z, bwdPackF32Z
	}
	if w.bf != nil {
		packBF[v-1](cx, uintptr(4*lx), cy, uintptr(4*ly), &w.bf[j0*w.cols+c], uintptr(2*w.cols), kc, mask, bp)
	} else {
		packF[v-1](cx, uintptr(4*lx), cy, uintptr(4*ly), &w.data[j0*w.cols+c], uintptr(4*w.cols), kc, mask, bp)
	}
	return bp, ldb, b0 + bwdPackR
}

// outerAsm is outerAcc with the assembly tiles; it reports false, having
// done nothing, when the rows of us or vs are not evenly spaced. Each tile
// sums over the whole batch in ascending order. When vs's rows are wide,
// each strip of it (wv vectors, the whole batch) is packed contiguous
// first: the batch's rows lie a row of vs apart, a new page per step,
// which the hardware prefetcher does not follow and which (a multiple of
// 4 KiB) maps every step to one L1 set. us is read in place: its rows are
// narrow when vs's are wide (a LoRA A's gradient), and packing a wide us
// (a LoRA B's) cost about what its tiles do; a wide us beyond L2 with a
// narrow dst takes outerTransposed, which packs strips of us instead.
func outerAsm(dst []float32, rows, cols int, us, vs [][]float32) bool {
	m := len(us)
	lu, ok := rowStride(us, rows)
	lv, ok2 := rowStride(vs[:m], cols)
	if !ok || !ok2 || len(dst) < rows*cols {
		return false
	}
	vs = vs[:m] // the tiles sum len(vs) batch rows; vs may hold more
	if cols < 64 && m*rows >= outerTransposeFloats {
		outerTransposed(dst, rows, cols, us, vs, lu, lv)
		return true
	}
	outerTiles(dst, rows, cols, us, vs, lu, lv)
	return true
}

// outerTransposeFloats is the size of us (in float32s, 2 MiB) from which
// outerAsm runs a narrow dst (under 4 vectors wide: a LoRA B's gradient,
// rank columns) with its lanes along dst's rows (outerTransposed): the
// tiles then read us's rows 4 vectors at a time instead of 12 values, one
// line in each of the batch's rows, which from beyond L2 (us of 512 tokens
// × 3072 is 6 MiB) left the tiles waiting on L3: at 512 tokens 0.46-0.75×
// the time on 1024-3072 × 32 (paired, loaded machine), at 256 tokens
// 0.85-0.99×; at 128 tokens, us in L2, the gathers and scatters of the
// transposed C cost more (1.2-1.5×).
const outerTransposeFloats = 1 << 19

// outerTileFloor is the fewest accumulators tileShape counts a tile of
// outerAcc's as: a LoRA gradient's tiles run along its rank, and with 8
// (matMulT's) rank 32 took 6-row tiles of 4 vectors, the sixth a 2-row
// tail; 12 picks 8-row tiles of 3 vectors, four with no tail, and
// those took 0.94-1.01 of the time (median 0.98, 17 of 18 pairs below 1)
// on A's and B's gradients of the Qwen3-0.6B shapes at 512 tokens
// (BenchmarkOuterTileFloor, load 19). Each element still sums the batch
// in ascending order: the same bits (TestBackwardAsmMatchesScalar's rank
// 32 shapes).
var outerTileFloor = 12

// outerTransposed is outerAsm with the tiles' rows along dst's columns and
// their lanes along dst's rows, reading C by gathers and scatters
// (bwdColsT): the same products in the same order (a product's factors
// commute exactly in a fused multiply-add), so the same bits.
func outerTransposed(dst []float32, rows, cols int, us, vs [][]float32, lu, lv int) {
	m := len(us)
	wv := tileShape(cols, (rows+15)/16, colsTRmax(), outerTileFloor)
	r := colsTRmax()[wv]
	parallelFor(rows, 16*wv, rows*cols*m, func(lo, hi int) {
		strip, put := outerStrip(lu, m*16*wv)
		defer put()
		for o := lo; o < hi; o += 16 * wv {
			n := min(16*wv, hi-o)
			v, mask := (n+15)/16, lastMask(n)
			// A full first tile packs the strip as it multiplies (as
			// matMulT's do): 0.82-0.86× the time at 512 tokens, 0.94-0.99×
			// at 128 (paired, loaded machine).
			k := 0
			var b *float32
			var ldb uintptr
			if strip != nil && v == wv && cols >= r {
				bwdColsTPack[v-1](&dst[o*cols], uintptr(4*cols), &vs[0][0], uintptr(4*lv), &us[0][o], uintptr(4*lu), m, mask, &strip[0])
				k, b, ldb = r, &strip[0], uintptr(64*v)
			} else {
				b, ldb = packStrip(strip, &us[0][o], uintptr(4*lu), m, v, mask)
			}
			for ; k < cols; k += r {
				tr := min(r, cols-k)
				bwdColsT[v-1][tr-1](&dst[o*cols+k], uintptr(4*cols), &vs[0][k], uintptr(4*lv), b, ldb, m, mask)
			}
		}
	})
}

// outerTiles is outerAsm's work with the lanes along dst's rows. A dst
// of at most outerSplitColsRows rows (a LoRA A's gradient, rank rows) is
// split among the cores by columns, else by rows: split by rows, each core
// packed every strip of vs for its few rows' tiles.
func outerTiles(dst []float32, rows, cols int, us, vs [][]float32, lu, lv int) {
	m := len(us)
	wv := tileShape(rows, (cols+15)/16, colsRmax(), outerTileFloor)
	r := colsRmax()[wv]
	if rows <= outerSplitColsRows {
		parallelPieces(cols, 16*wv*max(1, tCols/(16*wv)), rows*cols*m, func(lo, hi int) {
			outerBlock(dst, cols, us, vs, lu, lv, wv, 0, rows, lo, hi)
		})
		return
	}
	parallelFor(rows, r, rows*cols*m, func(lo, hi int) {
		outerBlock(dst, cols, us, vs, lu, lv, wv, lo, hi, 0, cols)
	})
}

// outerSplitColsRows is the most rows of dst that outerTiles splits by
// columns.
var outerSplitColsRows = 64

// outerBlock does dst's rows [lo, hi) × columns [k0, k1) of outerTiles, a
// strip of wv vectors at a time.
func outerBlock(dst []float32, cols int, us, vs [][]float32, lu, lv, wv, lo, hi, k0, k1 int) {
	outerBlockShared([]outerTerm{{dst, us, lu, lo, hi}}, cols, vs, lv, wv, k0, k1)
}

// outerTerm is one gradient of outerBlockShared: dst's rows [lo, hi)
// from us (rows lu float32s apart).
type outerTerm struct {
	dst    []float32
	us     [][]float32
	lu     int
	lo, hi int
}

// outerBlockShared does columns [k0, k1) of every term's dst, a strip of
// wv vectors of vs (the whole batch) at a time, each strip packed once for
// the tiles of every term: LoRA A gradients of layers that read the same
// input (q, k and v; gate and up) meet each packed strip with 96 or 64
// rows of tiles instead of 32 each. Each element still sums the batch in
// ascending order in one tile, so the bits are those of one outerAcc per
// term.
func outerBlockShared(terms []outerTerm, cols int, vs [][]float32, lv, wv, k0, k1 int) {
	m, r := len(vs), colsRmax()[wv]
	strip, put := outerStrip(lv, m*16*wv)
	defer put()
	for k := k0; k < k1; k += 16 * wv {
		n := min(16*wv, k1-k)
		v, mask := (n+15)/16, lastMask(n)
		packed := false
		for _, t := range terms {
			dst, us, lu, o := t.dst, t.us, t.lu, t.lo
			// The first full tile packs the strip as it multiplies (as
			// outerTransposed's).
			if strip != nil && !packed && v == wv && t.hi-o >= r {
				bwdColsPack[v-1](&dst[o*cols+k], uintptr(4*cols), &us[0][o], uintptr(4*lu), &vs[0][k], uintptr(4*lv), m, mask, &strip[0])
				o += r
				packed = true
			}
			var b *float32
			var ldb uintptr
			if !packed {
				b, ldb = packStrip(strip, &vs[0][k], uintptr(4*lv), m, v, mask)
				packed = strip != nil
			} else {
				b, ldb = &strip[0], uintptr(64*v)
			}
			if strip == nil {
				packed = false // read in place by every term
			}
			for ; o < t.hi; o += r {
				tr := min(r, t.hi-o)
				bwdCols[v-1][tr-1](&dst[o*cols+k], uintptr(4*cols), &us[0][o], uintptr(4*lu), b, ldb, m, mask)
			}
		}
	}
}

// outerAsmShared is outerAccShared with the assembly tiles (outerTiles
// split by columns, each strip of vs packed once for every term); it
// reports false, having done nothing, when it cannot: rows above
// outerSplitColsRows, or rows of us or vs not evenly spaced.
func outerAsmShared(dsts [][]float32, rows, cols int, uss [][][]float32, vs [][]float32) bool {
	m := len(vs)
	lv, ok := rowStride(vs, cols)
	if !ok || rows > outerSplitColsRows || m == 0 {
		return false
	}
	terms, ok := outerTerms(dsts, rows, cols, uss, m)
	if !ok {
		return false
	}
	wv := tileShape(rows, (cols+15)/16, colsRmax(), outerTileFloor)
	parallelPieces(cols, 16*wv*max(1, tCols/(16*wv)), len(dsts)*rows*cols*m, func(lo, hi int) {
		outerBlockShared(terms, cols, vs, lv, wv, lo, hi)
	})
	return true
}

// outerTerms returns the terms of outerAccShared's sum of m batch rows,
// or false when some us's rows are not evenly spaced, are not m, or a dst
// is short.
func outerTerms(dsts [][]float32, rows, cols int, uss [][][]float32, m int) ([]outerTerm, bool) {
	terms := make([]outerTerm, len(dsts))
	for i, d := range dsts {
		lu, ok := rowStride(uss[i], rows)
		if !ok || len(uss[i]) != m || len(d) < rows*cols {
			return nil, false
		}
		terms[i] = outerTerm{d, uss[i], lu, 0, rows}
	}
	return terms, true
}

// outerPackStride is the row stride of the B operand (in float32s, 1
// KiB) from which outerAsm packs its strips.
const outerPackStride = 256

// outerStrip returns a pooled strip of n float32s when B's rows lie
// stride float32s apart, at least outerPackStride, else nil, and the
// function that returns it to the pool.
func outerStrip(stride, n int) ([]float32, func()) {
	if stride < outerPackStride {
		return nil, func() {}
	}
	sp := outerPool.Get().(*[]float32)
	*sp = growTo(*sp, n)
	return *sp, func() { outerPool.Put(sp) }
}

// packStrip copies m rows of v vectors of B (rows ldb bytes apart) into
// strip and returns it as B, or B itself when strip is nil.
func packStrip(strip []float32, b *float32, ldb uintptr, m, v int, mask uint16) (*float32, uintptr) {
	if strip == nil {
		return b, ldb
	}
	bwdCopy[v-1](&strip[0], b, ldb, m, mask)
	return &strip[0], uintptr(64 * v)
}
