package engine

import (
	"math"
	"runtime"
	"slices"
	"sync"
)

// Numeric kernels. Every output element of a matrix product is summed in
// one fixed order (dotLanes for the forward product, sequential in the
// backward ones), whatever the batch size or the number of goroutines: results are bit-identical between a request run
// alone and the same request batched with others (batch invariance), which
// keeps seeded sampling reproducible under load.
//
// Each term of a matrix product is one fused multiply-add (fma32: the
// product is not rounded before its add), as in every vector kernel.
// Elsewhere (attention's dot1 and axpy, the elementwise kernels) products
// that feed an addition are written float32(a*b) (float64(a*b)) so the
// compiler never fuses them (it may on arm64 or GOAMD64=v3): either way
// the same inputs give the same bits on every machine.

// mat is a row-major [rows, cols] matrix (PyTorch Linear layout: rows =
// output features, cols = input features), held either as float32 (data) or
// as bfloat16 bits (bf). bfloat16 widens exactly to float32, so both give
// the same results; bf16 halves the memory of large checkpoints.
type mat struct {
	rows, cols int
	data       []float32
	bf         []uint16
	vn         []uint16 // bf in the bf16 path's layout (kernels_bf16.go), when it is on
}

func (m mat) row(i int) []float32 { return m.data[i*m.cols : (i+1)*m.cols : (i+1)*m.cols] }

// rowInto copies row i into dst as float32.
func (m mat) rowInto(i int, dst []float32) {
	if m.bf == nil {
		copy(dst, m.row(i))
		return
	}
	widenBF16(dst[:m.cols], m.bf[i*m.cols:(i+1)*m.cols])
}

// dot1 is the vector dot product for attention scores: 8 independent
// accumulators hide the floating-point add latency.
func dot1(w, x []float32) float32 {
	if s, ok := dot1Vec(w, x); ok {
		return s
	}
	n := len(x)
	w = w[:n]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= n; i += 8 {
		ww := w[i : i+8 : i+8]
		xx := x[i : i+8 : i+8]
		s0 += float32(ww[0] * xx[0])
		s1 += float32(ww[1] * xx[1])
		s2 += float32(ww[2] * xx[2])
		s3 += float32(ww[3] * xx[3])
		s4 += float32(ww[4] * xx[4])
		s5 += float32(ww[5] * xx[5])
		s6 += float32(ww[6] * xx[6])
		s7 += float32(ww[7] * xx[7])
	}
	for ; i < n; i++ {
		s0 += float32(w[i] * x[i])
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// dotLanes is the canonical summation order of the forward matrix product
// (the "dot-form"): an output element Σ_k w[k]·x[k] is summed in 16 lane
// partial sums, lane l adding the products at k ≡ l (mod 16) in ascending
// k (one fused multiply-add each, fma32), and the lanes are then added in
// the fixed tree of laneTree. The order depends only on the length, never
// on the batch size, the goroutines or the kernel, so every path gives
// the same bits; the assembly kernels (gemm_fwd_amd64.s, AVX-512, and
// gemm_fwd_avx2_amd64.s, two 8-lane halves) do exactly these additions
// with one lane per vector element, reading w and x contiguously.
func dotLanes(w, x []float32) float32 {
	w = w[:len(x)]
	var a [16]float32
	k := 0
	for ; k+16 <= len(x); k += 16 {
		ww, xx := w[k:k+16:k+16], x[k:k+16:k+16]
		for l := range a {
			a[l] = fma32(ww[l], xx[l], a[l])
		}
	}
	for l, xv := range x[k:] {
		a[l] = fma32(w[k+l], xv, a[l])
	}
	return laneTree(&a)
}

// dotLanesBF is dotLanes for bfloat16 weights, widened exactly.
func dotLanesBF(w []uint16, x []float32) float32 {
	w = w[:len(x)]
	var a [16]float32
	for k, xv := range x {
		a[k&15] = fma32(bf16(w[k]), xv, a[k&15])
	}
	return laneTree(&a)
}

// laneTree adds the 16 lane sums: lane i and i+8, then i and i+4, then i
// and i+2, then i and i+1.
func laneTree(a *[16]float32) float32 {
	for h := 8; h >= 1; h /= 2 {
		for i := range h {
			a[i] += a[i+h]
		}
	}
	return a[0]
}

// useSIMD selects the vector kernels (archsimd in kernels_simd.go, AVX-512
// assembly in gemm_fwd_amd64.s, AVX2 assembly in gemm_fwd_avx2_amd64.s)
// where the build and the CPU have them; every path gives the same bits.
var useSIMD = simdOK || fwdAsm || fwdAVX2

// bf16 widens a bfloat16 exactly to float32.
func bf16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// matRows computes y[b][j] = W[j]·x[b] (+ y[b][j] when accumulate) for rows
// j in [lo, hi) and every batch vector b, each element in dotLanes order.
func matRows(w mat, xs, ys [][]float32, lo, hi int, accumulate bool) {
	if w.vn != nil {
		matMulBF16(w, xs, ys, lo, hi, accumulate)
		return
	}
	if !matRowsAsm(w, xs, ys, lo, hi, accumulate) {
		matRowsScalar(w, xs, ys, lo, hi, accumulate)
	}
}

// matRowsScalar is matRows in plain Go: the reference every other path
// matches bit for bit. A row stays in L1 while it meets every vector.
func matRowsScalar(w mat, xs, ys [][]float32, lo, hi int, accumulate bool) {
	for j := lo; j < hi; j++ {
		for b, x := range xs {
			var v float32
			if w.bf != nil {
				v = dotLanesBF(w.bf[j*w.cols:(j+1)*w.cols], x)
			} else {
				v = dotLanes(w.row(j), x)
			}
			if accumulate {
				ys[b][j] += v
			} else {
				ys[b][j] = v
			}
		}
	}
}

// putRow writes v to y, or adds it when accumulate (addVec: every LoRA
// B's output is added this way, the logits on the output layer too). On a
// 0.6B training step under perf the scalar loop was 2.5% of the samples,
// the vector one 2.1%: the rows stream from memory; folding B·(A·x) into
// the base product's tile would save the pass.
func putRow(y, v []float32, accumulate bool) {
	if !accumulate {
		copy(y, v)
		return
	}
	v = v[:len(y)]
	for i := addVec(y, v); i < len(y); i++ {
		y[i] += v[i]
	}
}

// parallelMinWork is the number of multiply-adds below which a matrix
// product runs on the calling goroutine: under it, waking another core costs
// more than it saves.
const parallelMinWork = 1 << 16

// matMul computes ys[b] = W·xs[b] for every b (or adds it when accumulate),
// splitting rows across goroutines when the product is large enough. The
// rows are cut into several pieces per core that the goroutines of
// forkJoin take in turn, so a core that gets less CPU time (another process, a slow
// wake-up, a virtual CPU the host holds back) does less of the work; a
// batch is packed for the vector kernels once, before the split, so the
// pieces cost nothing extra. Every output element is computed whole by
// one goroutine, so the split changes no bits.
func matMul(w mat, xs, ys [][]float32, accumulate bool) {
	if w.vn != nil {
		matMulBF16Split(w, xs, ys, accumulate)
		return
	}
	workers := productWorkers(w, len(xs))
	if workers == 1 {
		matRows(w, xs, ys, 0, w.rows, accumulate)
		return
	}
	if p, ok := packForward(w, xs); ok {
		defer p.release()
		matMulSlices(p, w, xs, ys, accumulate, workers)
		return
	}
	forkDecode1(w, xs, ys, workers, accumulate)
}

// matMulSlices is matMul's split of a packed batch over workers: whole
// 6-row tiles for a batch's kernels (its vectors past the last group of
// four take 16 rows at a time and then single rows, so any piece suits
// them; the AVX2 lane tiles' 24-row panels: rowAlign), one slice of the
// batch at a time.
func matMulSlices(p fwdPack, w mat, xs, ys [][]float32, accumulate bool, workers int) {
	s := p.tokenSlices(w.cols, len(xs))
	p.lanePlanesFor(w, len(xs), workers)
	for i := range s {
		t0, t1 := sliceOf(len(xs), s, i)
		q, xq, yq := p.tokens(w.cols, t0), xs[t0:t1], ys[t0:t1]
		forkRows(w.rows, p.rowAlign(w.rows, len(xs), workers), workers, func(lo, hi int) { q.rows(w, xq, yq, lo, hi, accumulate) })
	}
}

// packedIn is a batch packed once (packForward) for the products of n
// columns that read it, or nothing (ok false): a LoRA layer's A and W,
// and q, k and v (gate and up), read the same vectors.
type packedIn struct {
	p  fwdPack
	n  int
	ok bool
}

// packIn packs xs for w's kernels and every product like w (not a bf16
// split matrix, the same columns).
func packIn(w mat, xs [][]float32) packedIn {
	if w.vn != nil {
		return packedIn{}
	}
	p, ok := packForward(w, xs)
	return packedIn{p, w.cols, ok}
}

func (in packedIn) release() {
	if in.ok {
		in.p.release()
	}
}

// takes reports whether w's product can run on the packed batch.
func (in packedIn) takes(w mat) bool { return in.ok && w.vn == nil && w.cols == in.n }

// mul is matMul on the packed batch where it suits w.
func (in packedIn) mul(w mat, xs, ys [][]float32, accumulate bool) {
	if in.takes(w) {
		matMulOn(in.p, w, xs, ys, accumulate)
		return
	}
	matMul(w, xs, ys, accumulate)
}

// fold is matMulFold on the packed batch where it suits w.
func (in packedIn) fold(w mat, xs, ys [][]float32, b mat, ts [][]float32, accumulate bool) {
	if in.takes(w) {
		matMulFoldOn(in.p, w, xs, ys, b, ts, accumulate)
		return
	}
	matMulFold(w, xs, ys, b, ts, accumulate)
}

// matMulOn is matMul for a w without a bf16 split on xs already packed
// (p, from packForward on xs and a matrix of w's columns; packedIn):
// packing is ~2% of a 2048-row product's time at M = 1024 and a third
// of a LoRA A's own.
func matMulOn(p fwdPack, w mat, xs, ys [][]float32, accumulate bool) {
	workers := productWorkers(w, len(xs))
	if workers == 1 {
		p.rows(w, xs, ys, 0, w.rows, accumulate)
		return
	}
	matMulSlices(p, w, xs, ys, accumulate, workers)
}

// productWorkers is how many goroutines w's product over n vectors is
// split over: one below parallelMinWork's work or 16 rows, else one per
// parallelMinWork of work up to GOMAXPROCS.
func productWorkers(w mat, n int) int {
	work := w.rows * w.cols * n
	if work < parallelMinWork || w.rows < 16 {
		return 1
	}
	return min(runtime.GOMAXPROCS(0), work/parallelMinWork)
}

// matMulGroup computes yss[i] = ms[i]·xs for matrices that read the same
// vectors (q, k and v; gate and up). Decoding (one to three vectors, no
// matrix on the bf16 path) runs them as one fork (forkDecode): a
// decoding step's products are 50-300 µs each, and each fork costs a
// hand-off to the other core and a tail where one core finishes its last
// piece alone, so a layer takes four hand-offs and tails instead of seven.
// Larger batches (a prefill) take one matrix at a time on the batch packed
// once for all of them (packedIn), as the training forward does. Each
// output is computed whole by the same kernels either way: the same bits.
func matMulGroup(ms []mat, xs [][]float32, yss [][][]float32) {
	workers := groupWorkers(ms, len(xs))
	if len(xs) >= 4 || len(ms) < 2 || workers == 1 {
		in := packIn(ms[0], xs)
		defer in.release()
		for i, w := range ms {
			in.mul(w, xs, yss[i], false)
		}
		return
	}
	forkDecode(ms, xs, yss, workers, false)
}

// groupWorkers is how many cores a group's fork over n vectors runs on
// (matMulGroup, fuseWorkers): one per parallelMinWork of the group's
// work up to GOMAXPROCS, and one when a matrix is on the bf16 path,
// which packs its vectors per call (matMul's split).
func groupWorkers(ms []mat, n int) int {
	if slices.ContainsFunc(ms, func(w mat) bool { return w.vn != nil }) {
		return 1
	}
	return workWorkers(ms, n)
}

// workWorkers is how many cores n vectors' products with ms are worth:
// one per parallelMinWork multiply-adds, at most GOMAXPROCS.
func workWorkers(ms []mat, n int) int {
	work := 0
	for _, w := range ms {
		work += w.rows * w.cols * n
	}
	return min(runtime.GOMAXPROCS(0), max(1, work/parallelMinWork))
}

// forkDecode computes yss[i] = ms[i]·xs (or adds it) for decoding's one
// to three vectors in one fork over decodePieces, whole 16-row blocks for
// the one-row kernel.
func forkDecode(ms []mat, xs [][]float32, yss [][][]float32, workers int, accumulate bool) {
	decodeForks.Get().(*decodeFork).run(ms, xs, yss, workers, accumulate)
}

// forkDecode1 is forkDecode of one matrix.
func forkDecode1(w mat, xs, ys [][]float32, workers int, accumulate bool) {
	f := decodeForks.Get().(*decodeFork)
	f.one[0], f.oneY[0] = w, ys
	f.run(f.one[:], xs, f.oneY[:], workers, accumulate)
}

// decodeFork is one forkDecode's arguments and pieces, and its piece
// function made once: a closure over them per fork, with matMul's slices
// of one matrix and its pieces, was most of what a decoding token
// allocated, each byte fresh memory (kvPool).
type decodeFork struct {
	ms         []mat
	xs         [][]float32
	yss        [][][]float32
	ps         []rowPiece
	accumulate bool
	one        [1]mat
	oneY       [1][][]float32
	piece      func(i int)
}

var decodeForks = sync.Pool{New: func() any {
	f := &decodeFork{}
	f.piece = f.runPiece
	return f
}}

// run cuts the pieces and runs them, then gives f back to decodeForks.
func (f *decodeFork) run(ms []mat, xs [][]float32, yss [][][]float32, workers int, accumulate bool) {
	f.ms, f.xs, f.yss, f.accumulate = ms, xs, yss, accumulate
	f.ps = decodeCut(f.ps[:0], ms, 16, workers)
	forkJoin(len(f.ps), f.piece)
	f.ms, f.xs, f.yss, f.one, f.oneY = nil, nil, nil, [1]mat{}, [1][][]float32{}
	decodeForks.Put(f)
}

func (f *decodeFork) runPiece(i int) {
	p := f.ps[i]
	matRows(f.ms[p.w], f.xs, f.yss[p.w], p.lo, p.hi, f.accumulate)
}

// decodeCut appends forkDecode's pieces to dst: decodePiecesTo, a
// variable so a benchmark can compare other cuts in one process
// (BenchmarkDecodeCuts).
var decodeCut = decodePiecesTo

// rowPiece is rows [lo, hi) of matrix w of a group.
type rowPiece struct{ w, lo, hi int }

// decodeMinPiece is the fewest weights of a decoding piece: 256 KiB of
// bfloat16, about 10 µs of one core.
const decodeMinPiece = 1 << 17

// decodePieces cuts the rows of ms, in order, into pieces of whole align
// blocks for forkJoin, guided: each takes a 1/workers share of the
// weights still left, at least decodeMinPiece, so the first pieces are
// large (few claims) and the last ones small. A fork ends with one core
// finishing its last piece while the other waits; with 8 equal pieces a
// worker that tail was a 16th of the product (lm_head: 19 MB of bfloat16
// per piece, over a millisecond of one core each token). Each piece
// starts four new streams (fwdRowsLong), about 0.6-0.75 µs of one core
// reading at 30 GB/s (BenchmarkRowLongWidth's fixed sizes), so the share
// and minimum are coarse: a 1/(4·workers) share and 32K weights (101
// pieces a 0.6B layer against 24 now) decoded 0.94-0.99x as fast with
// the host loaded (load 3-4.7), level when quiet
// (docs/engine-decoding.md, "Decoding's pieces: half of what is left").
func decodePieces(ms []mat, align, workers int) []rowPiece {
	return decodePiecesTo(nil, ms, align, workers)
}

// decodePiecesTo appends decodePieces' pieces to dst. The minimum gives
// way to four pieces a core's share, so that on many cores a small
// product still has a piece for every core (on two cores the 0.6B
// shape's products are all past it).
func decodePiecesTo(dst []rowPiece, ms []mat, align, workers int) []rowPiece {
	total := 0
	for _, w := range ms {
		total += w.rows * w.cols
	}
	return cutPieces(dst, ms, align, workers, min(decodeMinPiece, max(total/(4*workers), 1)))
}

// cutPieces appends to dst the pieces of ms of 1/div of the weights left,
// at least minPiece weights, whole multiples of align rows (decodePieces;
// BenchmarkDecodeGap tries other cuts).
func cutPieces(dst []rowPiece, ms []mat, align, div, minPiece int) []rowPiece {
	left := 0
	for _, w := range ms {
		left += w.rows * w.cols
	}
	ps := dst
	for i, w := range ms {
		for lo := 0; lo < w.rows; {
			rows := max(left/div, minPiece) / max(w.cols, 1)
			hi := min(lo+max(align, (rows+align-1)/align*align), w.rows)
			ps = append(ps, rowPiece{i, lo, hi})
			left -= (hi - lo) * w.cols
			lo = hi
		}
	}
	return ps
}

// forkRows runs rows over [0, n) in 8 pieces a worker (whole multiples of
// align), so that a core a neighbour slows takes fewer of them.
func forkRows(n, align, workers int, rows func(lo, hi int)) {
	chunk := rowChunk(n, align, workers)
	forkJoin((n+chunk-1)/chunk, func(i int) { rows(i*chunk, min((i+1)*chunk, n)) })
}

// rowChunk is the rows of each of forkRows' pieces.
func rowChunk(n, align, workers int) int {
	pieces := 8 * workers
	chunk := (n + pieces - 1) / pieces
	return (chunk + align - 1) / align * align
}

// axpy adds a·x to y, each product rounded before its add: attention's
// weighted sums (kernels_attn.go keeps this rounding), the MoE combine and
// the gradient accumulation.
func axpy(y []float32, a float32, x []float32) {
	if axpyVec(y, a, x, false) {
		return
	}
	x = x[:len(y)]
	for i := range y {
		y[i] += float32(a * x[i])
	}
}

// axpyFMA adds a·x to y with one fused multiply-add per element (fma32):
// the one-row tails of the backward products, whose tiles fuse.
func axpyFMA(y []float32, a float32, x []float32) {
	if axpyVec(y, a, x, true) {
		return
	}
	x = x[:len(y)]
	for i := range y {
		y[i] = fma32(a, x[i], y[i])
	}
}

// matVecReference is the plain loop the benchmarks compare the kernel with.
func matVecReference(w mat, x, y []float32) {
	for j := 0; j < w.rows; j++ {
		var s float32
		for i := 0; i < w.cols; i++ {
			s += w.data[j*w.cols+i] * x[i]
		}
		y[j] = s
	}
}

// logSumExp returns log Σ exp(logits·invTemp), computed in float64 (the
// sum in expScaledSum's order).
func logSumExp(logits []float32, invTemp float64) float64 {
	m := maxScaled(logits, invTemp)
	return m + math.Log(expScaledSum(logits, invTemp, m))
}

// logSumExpKeep is logSumExp(logits, 1) (the same bits) that also keeps
// the exponentials exp64(logits[i] − max) in e and returns their sum.
func logSumExpKeep(e []float64, logits []float32) (lse, sum float64) {
	m := maxScaled(logits, 1)
	sum = expScaledKeep(e, logits, 1, m)
	return m + math.Log(sum), sum
}

// maxScaled is the largest logits[i]·invTemp. For invTemp > 0 that is the
// largest logit scaled (rounding is monotone), found by max32Vec.
func maxScaled(logits []float32, invTemp float64) float64 {
	if mx, ok := max32Vec(logits); ok && invTemp > 0 {
		return float64(mx) * invTemp
	}
	m := math.Inf(-1)
	for _, v := range logits {
		if f := float64(v) * invTemp; f > m {
			m = f
		}
	}
	return m
}
