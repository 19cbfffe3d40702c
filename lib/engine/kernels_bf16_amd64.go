package engine

import (
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"github.com/tinkershell/tinker/lib/cpufeat"
)

//go:generate go run ./internal/asmgen/bf16 -out gemm_bf16_amd64.s -stubs gemm_bf16_stub_amd64.go

// The CPU's bf16 instructions: AMX tiles (TDPBF16PS, Sapphire Rapids and
// later) or AVX512-BF16 (VDPBF16PS: Cooper Lake, Zen 4). Both kernels add
// each output's column pairs in the same order; see bf16Path. amxReady
// and bf16Compute read the CPU's flags where they are asked (package-level
// flags would be code run at every start); amxPermOnce asks Linux once.
var (
	amxPermOnce sync.Once
	amxPermOK   bool
)

// Linux grants a process the AMX tile state only on request
// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)); it checks that
// every thread's signal stack can hold the 8 KiB of tile data (Go's are
// 32 KiB).
const (
	archReqXcompPerm  = 0x1023
	xfeatureXtiledata = 18
)

// amxReady asks for the tile state once; false when the CPU or the kernel
// says no.
func amxReady() bool {
	if !cpufeat.AMXBF16() {
		return false
	}
	amxPermOnce.Do(func() {
		_, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0)
		amxPermOK = errno == 0
	})
	return amxPermOK
}

// amxTileCfgs[m-1] is the configuration of the one-block kernels for m ≤
// 16 tokens: palette 1 (byte 0), all eight tiles 64 bytes a row (bytes
// 16-31), the sums (TMM0-3) and the tokens (TMM4-5) m rows, the weights
// (TMM6-7) 16 (bytes 48-55). amxTileCfgs[15], all tiles 16 rows, is also
// the configuration of the kernels over two blocks of 16 tokens. Each row
// of sums comes from its own row of tokens,
// so a row's bits do not depend on m. Decoding's one token then loads 64
// bytes of tokens a step instead of 16 rows, 15 of them zero padding
// (1 KiB beside each 2 KiB of weights; 16 rows of 3072 columns, 99 KiB,
// do not stay in L1), multiplies one row and stores one. One-token products streaming 672 MiB
// of weights, paired ratios under load against the 16-row tiles: 0.95-0.97
// of the CPU time on two threads, 0.94-0.99 on one (the same tiles under
// both names: 0.98-1.02). A literal, laid out as data: built by a loop it
// was code that ran at every start of every program linking the engine
// (TestAMXTileCfgsLiteral checks it against that rule).
var amxTileCfgs = [16][64]byte{
	{0: 1, 16: 64, 18: 64, 20: 64, 22: 64, 24: 64, 26: 64, 28: 64, 30: 64, 48: 1, 1, 1, 1, 1, 1, 16, 16},
	{0: 1, 16: 64, 18: 64, 20: 64, 22: 64, 24: 64, 26: 64, 28: 64, 30: 64, 48: 2, 2, 2, 2, 2, 2, 16, 16},
	{0: 1, 16: 64, 18: 64, 20: 64, 22: 64, 24: 64, 26: 64, 28: 64, 30: 64, 48: 3, 3, 3, 3, 3, 3, 16, 16},
	{0: 1, 16: 64, 18: 64, 20: 64, 22: 64, 24: 64, 26: 64, 28: 64, 30: 64, 48: 4, 4, 4, 4, 4, 4, 16, 16},
	{0: 1, 16: 64, 18: 64, 20: 64, 22: 64, 24: 64, 26: 64, 28: 64, 30: 64, 48: 5, 5, 5, 5, 5, 5, 16, 16},
	{0: 1, 16: 64, 18: 64, 20: 64, 22: 64, 24: 64, 26: 64, 28: 64, 30: 64, 48: 6, 6, 6, 6, 6, 6, 16, 16},
	{0: 1, 16: 64, 18: 64, 20: 64, 22: 64, 24: 64, 26: 64, 28: 64, 30: 64, 48: 7, 7, 7, 7, 7, 7, 16, 16},
	{0: 1, 16: 64, 18: 64, 20: 64, 22: 64, 24: 64, 26: 64, 28: 64, 30: 64, 48: 8, 8, 8, 8, 8, 8, 16, 16},
	{0: 1, 16: 64, 18: 64, 20: 64, 22: 64, 24: 64, 26: 64, 28: 64, 30: 64, 48: 9, 9, 9, 9, 9, 9, 16, 16},
	{0: 1, 16: 64, 18: 64, 20: 64, 22: 64, 24: 64, 26: 64, 28: 64, 30: 64, 48: 10, 10, 10, 10, 10, 10, 16, 16},
	{0: 1, 16: 64, 18: 64, 20: 64, 22: 64, 24: 64, 26: 64, 28: 64, 30: 64, 48: 11, 11, 11, 11, 11, 11, 16, 16},
	{0: 1, 16: 64, 18: 64, 20: 64, 22: 64, 24: 64, 26: 64, 28: 64, 30: 64, 48: 12, 12, 12, 12, 12, 12, 16, 16},
	{0: 1, 16: 64, 18: 64, 20: 64, 22: 64, 24: 64, 26: 64, 28: 64, 30: 64, 48: 13, 13, 13, 13, 13, 13, 16, 16},
	{0: 1, 16: 64, 18: 64, 20: 64, 22: 64, 24: 64, 26: 64, 28: 64, 30: 64, 48: 14, 14, 14, 14, 14, 14, 16, 16},
	{0: 1, 16: 64, 18: 64, 20: 64, 22: 64, 24: 64, 26: 64, 28: 64, 30: 64, 48: 15, 15, 15, 15, 15, 15, 16, 16},
	{0: 1, 16: 64, 18: 64, 20: 64, 22: 64, 24: 64, 26: 64, 28: 64, 30: 64, 48: 16, 16, 16, 16, 16, 16, 16, 16},
}

// bf16Compute reports whether the CPU runs the bf16 path: AVX512-BF16
// rounds the activations and runs the products where AMX is missing.
func bf16Compute() bool { return cpufeat.AVX512BF16() }

// bf16UseAMX selects the AMX kernels over the AVX512-BF16 ones (a
// variable so a test can compare them).
var bf16UseAMX = amxReady

// bf16Chunk is the bytes of packed weight rows that stay in L2 while
// every group of tokens of a panel meets them; with the panel
// (bf16TokBytes) it keeps within this Xeon's 2 MiB L2 per core.
const bf16Chunk = 512 << 10

// bf16TokBytes bounds the packed tokens that meet every weight chunk
// before the next tokens do: without it the down projection's 512 tokens
// of 3072 columns (3 MiB, past the 2 MiB L2) came from L3 for every
// chunk of 2 weight blocks.
const bf16TokBytes = 1 << 20

var bf16Pool = sync.Pool{New: func() any { return new([]uint16) }}

// bf16Sums is bf16Rows's buffer of sums: 32 tokens × 16 blocks (chunk ≤
// 16). As a stack array it was zeroed on every call (32 KiB, some 900
// calls a decoded token); the kernels store every sum bf16Put reads.
type bf16Sums [32 * 16 * 16]float32

var bf16SumsPool = sync.Pool{New: func() any { return new(bf16Sums) }}

// packBF16Rows rounds the vectors to bfloat16 rows of bf16Cols(n)
// columns, zero-padded, bf16Pitch(n) apart, in whole blocks of 16 rows.
// Only the two-block AMX kernels (a last group of 17-31 tokens) read
// rows past the vectors, which are zeroed then; the others read their
// own rows (amxTileCfgs, bf16TilesAVX), so a decoding call skips
// clearing 15 rows (up to 93 KiB at 3072 columns).
func packBF16Rows(xs [][]float32, n int, pp *[]uint16) []uint16 {
	kp, ld := bf16Cols(n), bf16Pitch(n)
	size := (len(xs) + 15) / 16 * 16 * ld
	if cap(*pp) < size {
		*pp = make([]uint16, size)
	}
	xb := (*pp)[:size]
	n32 := n &^ 31
	// A prefill's 512 rows are a serial stretch worth splitting.
	parallelPieces(len(xs), 32, len(xs)*n, func(lo, hi int) {
		for t, x := range xs[lo:hi] {
			row := xb[(lo+t)*ld : (lo+t)*ld+kp]
			if n32 > 0 {
				bf16RoundRow(&row[0], &x[0], n32)
			}
			for k := n32; k < kp; k++ {
				row[k] = 0
				if k < n {
					row[k] = roundBF16(x[k])
				}
			}
		}
	})
	if len(xs)%32 > 16 {
		clear(xb[len(xs)*ld:])
	}
	return xb
}

// bf16Pitch is the distance between packed token rows of n columns: one
// 64-byte line past bf16Cols(n), so the 16 rows a tile load reads fall in
// different L1 sets (rows 2 or 6 KiB apart, the 0.6B widths, would share
// two of its 64 sets and evict each other).
func bf16Pitch(n int) int { return bf16Cols(n) + 32 }

// matMulBF16Split is matMul on the bf16 path: the vectors are rounded
// once, and blocks of 32 rows are split over the workers.
func matMulBF16Split(w mat, xs, ys [][]float32, accumulate bool) {
	matMulBF16Group([]mat{w}, xs, [][][]float32{ys}, accumulate)
}

// matMulBF16Group is matMulBF16Split of several matrices of one width
// over the same vectors (q, k and v; gate and up): the vectors are
// rounded once for all of them and the blocks of 32 rows of every matrix
// are split over the workers in one fork, so none waits for the slowest
// piece of each matrix. Each output's bits are those of its matrix alone.
func matMulBF16Group(ws []mat, xs [][]float32, ys [][][]float32, accumulate bool) {
	pp := bf16Pool.Get().(*[]uint16)
	defer bf16Pool.Put(pp)
	xb := packBF16Rows(xs, ws[0].cols, pp)
	unit := bf16PieceRows(len(xs))
	units := 0
	for _, w := range ws {
		units += (w.rows + unit - 1) / unit
	}
	work := unit * units * ws[0].cols * len(xs)
	workers := min(runtime.GOMAXPROCS(0), max(1, work/parallelMinWork))
	per := max(1, (units+4*workers-1)/(4*workers))
	type piece struct{ w, lo, hi int }
	var pieces []piece
	for j, w := range ws {
		for lo := 0; lo < w.rows; lo += unit * per {
			pieces = append(pieces, piece{j, lo, min(lo+unit*per, w.rows)})
		}
	}
	forkJoin(len(pieces), func(i int) {
		p := pieces[i]
		bf16Rows(ws[p.w], xb, len(xs), ys[p.w], p.lo, p.hi, accumulate)
	})
}

// bf16PieceRows is the rows of the pieces that matMulBF16Group splits
// over the workers, in whole kernel calls: two blocks of 16 for the AMX
// kernels, bf16AVX.n blocks (n1 for one token) for the AVX512-BF16 ones.
// In pieces of 32 rows, 1024 rows came in pieces of 8 blocks, a third of
// them run by kernels of two blocks.
func bf16PieceRows(m int) int {
	if bf16UseAMX() {
		return 32
	}
	return 16 * bf16AVXBlocks(m)
}

// matMulBF16 is matRows on the bf16 path.
func matMulBF16(w mat, xs, ys [][]float32, lo, hi int, accumulate bool) {
	pp := bf16Pool.Get().(*[]uint16)
	defer bf16Pool.Put(pp)
	bf16Rows(w, packBF16Rows(xs, w.cols, pp), len(xs), ys, lo, hi, accumulate)
}

// bf16Rows computes rows [lo, hi) for the m rounded vectors xb: for each
// panel of tokens that fits in L2 (bf16TokBytes), a chunk of weight
// blocks at a time (bf16Chunk) meeting every token of the panel; the
// kernels compute whole blocks of 16 rows, the rows outside [lo, hi) are
// dropped.
func bf16Rows(w mat, xb []uint16, m int, ys [][]float32, lo, hi int, accumulate bool) {
	out := bf16SumsPool.Get().(*bf16Sums)
	bf16RowsOn(w, xb, m, ys, lo, hi, accumulate, out)
	bf16SumsPool.Put(out)
}

// bf16RowsOn is bf16Rows with out for the sums (whatever it holds).
func bf16RowsOn(w mat, xb []uint16, m int, ys [][]float32, lo, hi int, accumulate bool, out *bf16Sums) {
	kp, ldx := bf16Cols(w.cols), bf16Pitch(w.cols)
	chunk := min(16, max(2, bf16Chunk/(32*kp)&^1))
	if !bf16UseAMX() {
		n := bf16AVXBlocks(m)
		chunk = min(16/n*n, max(n, bf16AVX.chunk/(32*kp)/n*n))
	}
	panel := bf16Panel(m, ldx)
	for t := 0; t < m; t += panel {
		xp, n, yp := xb[t*ldx:], min(panel, m-t), ys[t:]
		for b := lo / 16; b*16 < hi; b += chunk {
			nb := min(chunk, (hi+15)/16-b)
			if bf16UseAMX() {
				bf16ChunkAMX(w, xp, n, yp, b, nb, lo, hi, accumulate, out[:])
			} else {
				bf16ChunkAVX(w, xp, n, yp, b, nb, lo, hi, accumulate, out[:])
			}
		}
	}
}

// bf16Panel is the tokens of a panel: as many as fit in bf16TokBytes
// (rows ldx apart), in whole tiles of 32, the panels of m as equal as
// that allows.
func bf16Panel(m, ldx int) int {
	most := max(32, bf16TokBytes/(2*ldx)&^31)
	panels := max(1, (m+most-1)/most)
	return ((m+panels-1)/panels + 31) &^ 31
}

// bf16ChunkAMX runs blocks [b, b+nb) over the tokens 32 at a time.
func bf16ChunkAMX(w mat, xb []uint16, m int, ys [][]float32, b, nb, lo, hi int, accumulate bool, out []float32) {
	kp, ldx := bf16Cols(w.cols), bf16Pitch(w.cols)
	wv := w.vn[b*16*kp:]
	whole := !accumulate && b*16 >= lo && (b+nb)*16 <= hi
	for t := 0; t < m; t += 32 {
		n := min(32, m-t)
		if ld, ok := rowStride(ys[t:t+n], (b+nb)*16); whole && ok && n%16 == 0 {
			// The tiles store straight into the rows. A pointer, not a
			// slice over all n rows: equally spaced rows need not be one
			// allocation, and a slice across several breaks unsafe's rules
			// (checkptr, on under -race, stops there).
			bf16TilesAMX(xb[t*ldx:], ldx, n, wv, 16*kp, kp, nb, &ys[t][b*16], ld)
			continue
		}
		bf16Tiles(xb[t*ldx:], ldx, n, wv, 16*kp, kp, nb, out, 16*nb)
		bf16Put(out, 16*nb, ys[t:t+n], b*16, lo, hi, accumulate)
	}
}

// bf16ChunkAVX runs blocks [b, b+nb) over the tokens bf16AVX.t at a
// time.
func bf16ChunkAVX(w mat, xb []uint16, m int, ys [][]float32, b, nb, lo, hi int, accumulate bool, out []float32) {
	kp, ldx := bf16Cols(w.cols), bf16Pitch(w.cols)
	wv := w.vn[b*16*kp:]
	whole := !accumulate && b*16 >= lo && (b+nb)*16 <= hi
	tn := bf16AVX.t
	for t := 0; t < m; t += tn {
		n := min(tn, m-t)
		if ld, ok := rowStride(ys[t:t+n], (b+nb)*16); whole && ok {
			// Straight into the rows, as bf16ChunkAMX's tiles store:
			// copying the sums was 5% of a product's profile.
			bf16GroupAVX(xb[t*ldx:], ldx, n, wv, 16*kp, kp, nb, &ys[t][b*16], ld)
			continue
		}
		bf16TilesAVX(xb[t*ldx:], ldx, n, wv, 16*kp, kp, nb, out, 16*nb)
		bf16Put(out, 16*nb, ys[t:t+n], b*16, lo, hi, accumulate)
	}
}

// bf16Tiles computes out[t·ldo + 16j + r] = Σ_{k<kp} x[t·ldx + k]·W_j[r][k]
// for the m ≤ 32 bfloat16 rows of x (in whole blocks of 16, zero-padded)
// and the VNNI blocks W_j at w[j·ws:], j < nb; kp is a multiple of 32
// and every output one accumulator over the column pairs in ascending
// order, so its bits depend on neither m nor nb.
func bf16Tiles(x []uint16, ldx, m int, w []uint16, ws, kp, nb int, out []float32, ldo int) {
	if !bf16UseAMX() {
		bf16TilesAVX(x, ldx, m, w, ws, kp, nb, out, ldo)
		return
	}
	bf16TilesAMX(x, ldx, m, w, ws, kp, nb, &out[0], ldo)
}

// bf16TilesAMX is bf16Tiles on AMX, its outputs from out on, rows ldo
// floats apart.
func bf16TilesAMX(x []uint16, ldx, m int, w []uint16, ws, kp, nb int, out *float32, ldo int) {
	two := m > 16
	one := &amxTileCfgs[min(m, 16)-1] // only the block's own rows
	if nb >= 2 {
		if two { // amxBF16T2N2 with the weights prefetched (internal/asmgen/bf16/panel.go)
			amxBF16W2N2(&amxTileCfgs[15], &x[0], 2*ldx, &w[0], 2*ws, kp/32, nb/2, out, 4*ldo)
		} else {
			amxBF16T1N2(one, &x[0], 2*ldx, &w[0], 2*ws, kp/32, nb/2, out, 4*ldo)
		}
	}
	if nb%2 == 1 {
		last := nb - 1
		tail := (*float32)(unsafe.Add(unsafe.Pointer(out), 4*16*last)) // in the first row
		if two {
			amxBF16T2N1(&amxTileCfgs[15], &x[0], 2*ldx, &w[last*ws], 2*ws, kp/32, 1, tail, 4*ldo)
		} else {
			amxBF16T1N1(one, &x[0], 2*ldx, &w[last*ws], 2*ws, kp/32, 1, tail, 4*ldo)
		}
	}
}

// bf16AVX is the blocking of the AVX512-BF16 kernels: tokens t at a
// time by n weight blocks (avxBF16Kernels), one token by n1 blocks, and
// the bytes of weight blocks (chunk) that stay in L2 while every group of
// tokens meets them. A variable so a benchmark can compare shapes.
var bf16AVX = struct{ t, n, n1, chunk int }{4, 6, 6, bf16Chunk}

// bf16T1Variant selects the one-token kernels' prefetch distance
// (avxBF16T1Variants; 0: the generator's avxWeightPrefetch, 1 KiB), for
// a paired benchmark (BenchmarkDecodeFuseTokens' t1pf* switches).
var bf16T1Variant = 0

// bf16AVXPrefetch selects the kernels of two to four tokens that
// prefetch their weights 1 KiB ahead (avxBF16KernelsPf), as the
// one-token ones do: a decoding step of 2-16 rows reads each chunk of
// blocks from memory with its first group of tokens. A variable so a
// benchmark can compare them (BenchmarkDecodeRows, ROWS_SWITCH=bf16pf).
var bf16AVXPrefetch = true

// bf16AVXBlocks is the weight blocks an AVX512-BF16 kernel call takes
// for m tokens: bf16AVX.n1 for one token, else bf16AVX.n.
func bf16AVXBlocks(m int) int {
	if m == 1 {
		return bf16AVX.n1
	}
	return bf16AVX.n
}

// bf16TilesAVX is bf16Tiles on AVX512-BF16: bf16AVX.t tokens by
// bf16AVX.n blocks per kernel call, smaller kernels at the edges.
func bf16TilesAVX(x []uint16, ldx, m int, w []uint16, ws, kp, nb int, out []float32, ldo int) {
	tn := bf16AVX.t
	if m == 1 {
		tn = 1
	}
	for t := 0; t < m; t += tn {
		bf16GroupAVX(x[t*ldx:], ldx, min(tn, m-t), w, ws, kp, nb, &out[t*ldo], ldo)
	}
}

// bf16GroupAVX runs m ≤ bf16AVX.t tokens over nb blocks, the sums of
// token r from out + r·ldo floats on (a pointer, as for bf16TilesAVX's
// tiles: the rows need not be one allocation).
func bf16GroupAVX(x []uint16, ldx, m int, w []uint16, ws, kp, nb int, out *float32, ldo int) {
	n := bf16AVXBlocks(m)
	ks := &avxBF16Kernels[m]
	switch {
	case m == 1:
		ks = &avxBF16T1Variants[bf16T1Variant]
	case bf16AVXPrefetch:
		ks = &avxBF16KernelsPf[m]
	}
	for j := 0; j < nb; j += n {
		nn := min(n, nb-j)
		ks[nn](&x[0], 2*ldx, &w[j*ws], 2*ws, kp/2, (*float32)(unsafe.Add(unsafe.Pointer(out), 4*16*j)), 4*ldo)
	}
}

// bf16Put moves the sums (token i's row r0+c at out[i·width + c]) to
// rows [lo, hi) of ys.
func bf16Put(out []float32, width int, ys [][]float32, r0, lo, hi int, accumulate bool) {
	a, z := max(lo, r0), min(hi, r0+width)
	for i, y := range ys {
		putRow(y[a:z], out[i*width+a-r0:i*width+z-r0], accumulate)
	}
}

// matMulTBF16 is matMulT on the bf16 path: xs[b] (+)= Wᵀ·ys[b] with ys
// rounded to bfloat16 and each output one float32 accumulator over the
// row pairs in ascending order. Blocks of 32 columns are split over the
// workers; each packs its block's VNNI panel of Wᵀ (bf16PackPairs) once
// and runs every token over it.
func matMulTBF16(w mat, ys, xs [][]float32, accumulate bool) {
	pp := bf16Pool.Get().(*[]uint16)
	defer bf16Pool.Put(pp)
	yb := packBF16Rows(ys, w.rows, pp)
	work := w.rows * w.cols * len(ys)
	workers := min(runtime.GOMAXPROCS(0), max(1, work/parallelMinWork))
	pairs := (w.cols + 31) / 32
	per := max(1, (pairs+4*workers-1)/(4*workers))
	forkJoin((pairs+per-1)/per, func(i int) {
		panel := bf16Pool.Get().(*[]uint16)
		defer bf16Pool.Put(panel)
		for c := 32 * i * per; c < min(32*(i+1)*per, w.cols); c += 32 {
			tw := mat{rows: min(32, w.cols-c), cols: w.rows, vn: packPanelT(w, c, panel)}
			bf16Rows(tw, yb, len(ys), colsOf(xs[:len(ys)], c), 0, tw.rows, accumulate)
		}
	})
}

// packPanelT packs columns [c, c+32) of w as the VNNI blocks of two
// 16-row blocks of Wᵀ, from w's VNNI copy (the bf16 path keeps no other):
// a column pair of a row pair is four bfloat16 together in both layouts,
// (r,j) (r,j+1) (r+1,j) (r+1,j+1) in W's and (r,j) (r+1,j) (r,j+1)
// (r+1,j+1) in Wᵀ's, so each is one 64-bit word with its middle swapped.
func packPanelT(w mat, c int, pp *[]uint16) []uint16 {
	kp, kpT := bf16Cols(w.cols), bf16Cols(w.rows)
	vn := growU16(*pp, 2*16*kpT)
	*pp = vn
	clear(vn) // rows past the last block of 16
	src := unsafe.Slice((*uint64)(unsafe.Pointer(&w.vn[0])), len(w.vn)/4)
	dst := unsafe.Slice((*uint64)(unsafe.Pointer(&vn[0])), len(vn)/4)
	for blk := range 2 { // c+32 <= kp: the padding columns are zeros
		d := dst[blk*4*kpT:]
		for r := 0; r < w.rows; r += 2 {
			s, o := src[(r/16*16*kp+(c+16*blk)*16+r%16*2)/4:], d[r*4:r*4+8]
			for q := range o {
				v := s[q*8]
				o[q] = v&0xffff00000000ffff | v>>16&0xffff0000 | v<<16&0xffff00000000
			}
		}
	}
	return vn
}

// colsOf returns the vectors xs from column c on.
func colsOf(xs [][]float32, c int) [][]float32 {
	out := make([][]float32, len(xs))
	for i, x := range xs {
		out[i] = x[c:]
	}
	return out
}
