package engine

import (
	"runtime"
	"slices"
	"sync/atomic"
)

// decodeFuse moves a decoding step's per-head and elementwise work into
// the forks whose rows it reads, onto the core that finished them, where
// it ran between the forks on one core while the other spun:
//   - q, k and v: each head's bias, q/k norm and rope, and k's and v's
//     copy into the rows' caches, once the head's rows are done; then each
//     KV head's attention (its query heads over the cache, attendRow),
//     once its key, value and query heads are (fusedQKV);
//   - gate and up: SwiGLU of a fuseBlock of rows once both products'
//     rows of it are done (fusedGateUp).
//
// Every element's arithmetic is the same, only where and when it runs
// changes: the same bits (TestDecodeFuseSameBits). A variable so a
// benchmark can compare both in one process (BenchmarkDecodeFuseTokens).
var decodeFuse = true

// fuseAttention has fusedQKV run attention in its fork (with decodeFuse):
// a variable for BenchmarkDecodeFuseTokens.
var fuseAttention = true

// fuseBlock is the rows of SwiGLU's blocks (fusedGateUp): whole 16-row
// blocks of the pieces, small enough that the last piece's core has
// little left to do after it.
const fuseBlock = 128

// fuseState is a workspace's state of its fused forks, with their piece
// callbacks made once: made per fork, the closures and their captures
// were allocations, fresh memory on every token (kvPool).
type fuseState struct {
	cnt  []atomic.Int32 // rows (heads) finished of each head (group), or of each block
	m    *Model
	ws   *workspace
	rows []row
	li   int

	// fusedQKV: the matrices in cut order (k, v, q: each KV head's group
	// is complete once its query heads are, spread over q's pieces), their
	// outputs, biases and first counters, the groups' counters and whether
	// the fork runs attention.
	ms     [3]mat
	yss    [3][][]float32
	bias   [3][]float32
	first  [3]int
	groups int // first group counter
	attend bool

	qkvDone, gateUpDone func(rowPiece)
}

// Which matrix of fuseState.ms each is.
const (
	fuseK = iota
	fuseV
	fuseQ
)

func (ws *workspace) fused(m *Model, rows []row, li, counters int) *fuseState {
	f := &ws.fz
	if f.qkvDone == nil {
		f.qkvDone, f.gateUpDone = f.qkvPiece, f.gateUpPiece
	}
	if len(f.cnt) < counters {
		f.cnt = make([]atomic.Int32, counters)
	}
	for i := range f.cnt[:counters] {
		f.cnt[i].Store(0)
	}
	f.m, f.ws, f.rows, f.li = m, ws, rows, li
	return f
}

// release drops the references to the step's data.
func (f *fuseState) release() {
	f.m, f.rows, f.ms, f.yss, f.bias = nil, nil, [3]mat{}, [3][][]float32{}, [3][]float32{}
}

// fuseWorkers is how many cores a fused fork of ms over xs runs on, or 0
// when the step does not take the fused path: matMulGroup's fork for
// decoding's one to three vectors, float32 compute, no adapter (whose
// product needs the whole vector).
func fuseWorkers(ls []*LoRA, xs [][]float32, ms ...mat) int {
	if !decodeFuse || len(xs) >= 4 || slices.ContainsFunc(ls, func(l *LoRA) bool { return l != nil }) {
		return 0
	}
	work := 0
	for _, w := range ms {
		if w.vn != nil {
			return 0
		}
		work += w.rows * w.cols * len(xs)
	}
	if workers := min(runtime.GOMAXPROCS(0), max(1, work/parallelMinWork)); workers > 1 {
		return workers
	}
	return 0
}

// fusedQKV is layer li's q, k and v products over xn with each head
// finished inside the fork (decodeFuse), and each KV head's attention when
// attention is on the float32 path. It reports whether it ran (false: it
// did nothing, the step does not take the fused path) and whether it
// attended.
func (m *Model) fusedQKV(ws *workspace, rows []row, li int, xn [][]float32) (fused, attended bool) {
	c := m.cfg
	lw := &m.w.layers[li]
	n, hd := len(rows), c.HeadDim
	workers := fuseWorkers(ws.loras, xn[:n], lw.q, lw.k, lw.v)
	if workers == 0 || hd == 0 || c.KVHeads == 0 || c.Heads%c.KVHeads != 0 ||
		lw.q.rows != c.Heads*hd || lw.k.rows != c.KVHeads*hd || lw.v.rows != c.KVHeads*hd {
		return false, false
	}
	f := ws.fused(m, rows, li, c.Heads+3*c.KVHeads)
	defer f.release()
	f.ms = [3]mat{fuseK: lw.k, fuseV: lw.v, fuseQ: lw.q}
	f.yss = [3][][]float32{fuseK: ws.k[:n], fuseV: ws.v[:n], fuseQ: ws.q[:n]}
	for i, y := range f.yss {
		for b := range y {
			y[b] = y[b][:f.ms[i].rows]
		}
	}
	f.bias = [3][]float32{fuseK: lw.kBias, fuseV: lw.vBias, fuseQ: lw.qBias}
	f.first = [3]int{fuseK: 0, fuseV: c.KVHeads, fuseQ: 2 * c.KVHeads}
	f.groups = 2*c.KVHeads + c.Heads
	// Attention here only on the float32 path (the bf16 path's attention,
	// attentionBF16, packs the whole layer's cache), each KV head with its
	// own scratch.
	f.attend = fuseAttention && lw.o.vn == nil
	if f.attend {
		ws.scores = growTo(ws.scores, c.KVHeads)
	}
	forkDecodeThen(f.ms[:], xn[:n], f.yss[:], workers, false, f.qkvDone)
	return true, f.attend
}

// qkvPiece counts piece p's rows into its heads, finishing each head it
// completes and attending each KV head whose heads are all finished.
func (f *fuseState) qkvPiece(p rowPiece) {
	c := f.m.cfg
	hd, group := c.HeadDim, c.Heads/c.KVHeads
	for h := p.lo / hd; h*hd < p.hi; h++ {
		done := min(p.hi, (h+1)*hd) - max(p.lo, h*hd)
		if f.cnt[f.first[p.w]+h].Add(int32(done)) != int32(hd) {
			continue
		}
		f.finishHead(p.w, h)
		if !f.attend {
			continue
		}
		kvh := h
		if p.w == fuseQ {
			kvh = h / group
		}
		if f.cnt[f.groups+kvh].Add(1) == int32(2+group) {
			for i := range f.rows {
				f.m.attendRow(f.ws, f.rows, i, f.li, kvh, kvh, kvh+1)
			}
		}
	}
}

// finishHead adds head h's bias to matrix w's output, then for q and k
// applies the norm and rope and copies k and v into the caches, as the
// unfused step does for the whole rows (Model.qkv).
func (f *fuseState) finishHead(w, h int) {
	c := f.m.cfg
	lw := &f.m.w.layers[f.li]
	hd, kvd := c.HeadDim, c.KVHeads*c.HeadDim
	lo, hi := h*hd, (h+1)*hd
	for i, r := range f.rows {
		y := f.yss[w][i][lo:hi]
		if b := f.bias[w]; b != nil {
			for j, v := range b[lo:hi] {
				y[j] += v
			}
		}
		switch w {
		case fuseQ:
			if lw.qNorm != nil {
				rmsNorm(y, y, lw.qNorm, c.RMSNormEps)
			}
			applyRope(y, hd, f.ws.cos[i], f.ws.sin[i])
		case fuseK:
			if lw.qNorm != nil {
				rmsNorm(y, y, lw.kNorm, c.RMSNormEps)
			}
			applyRope(y, hd, f.ws.cos[i], f.ws.sin[i])
			copy(r.seq.k[f.li][r.pos*kvd+lo:r.pos*kvd+hi], y)
		default:
			copy(r.seq.v[f.li][r.pos*kvd+lo:r.pos*kvd+hi], y)
		}
	}
}

// fusedGateUp is layer li's gate and up products over xn with SwiGLU
// (ws.g = silu(gate)·up) done inside the fork, a fuseBlock of rows at a
// time on the core that finished the block's last rows (decodeFuse). It
// reports false, doing nothing, when the step does not take the fused
// path.
func (m *Model) fusedGateUp(ws *workspace, li int, xn [][]float32) bool {
	lw := &m.w.layers[li]
	n := len(xn)
	workers := fuseWorkers(ws.loras, xn, lw.gate, lw.up)
	if workers == 0 || lw.gate.rows != lw.up.rows {
		return false
	}
	rows := lw.gate.rows
	f := ws.fused(m, nil, li, (rows+fuseBlock-1)/fuseBlock)
	defer f.release()
	f.ms = [3]mat{lw.gate, lw.up}
	f.yss = [3][][]float32{ws.g[:n], ws.u[:n]}
	for _, y := range f.yss[:2] {
		for b := range y {
			y[b] = y[b][:rows]
		}
	}
	forkDecodeThen(f.ms[:2], xn, f.yss[:2], workers, false, f.gateUpDone)
	return true
}

// gateUpPiece counts piece p's rows into their blocks and applies SwiGLU
// to each block it completes.
func (f *fuseState) gateUpPiece(p rowPiece) {
	rows := f.ms[0].rows
	g, u := f.yss[0], f.yss[1]
	for k := p.lo / fuseBlock; k*fuseBlock < p.hi; k++ {
		lo, hi := k*fuseBlock, min((k+1)*fuseBlock, rows)
		done := min(p.hi, hi) - max(p.lo, lo)
		if f.cnt[k].Add(int32(done)) == int32(2*(hi-lo)) {
			for b := range g {
				siluMul(g[b][lo:hi], g[b][lo:hi], u[b][lo:hi])
			}
		}
	}
}
