package engine

import (
	"runtime"
	"slices"
	"sync/atomic"
	"time"
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
// With fuseLayer a dense layer's products run as one fork (fusedLayers):
// q, k and v, then o once every KV head has attended, gate and up once o
// is done and the core that finished it has normed the rows, down once
// SwiGLU is done; with fuseToken every layer of the step, the next
// layer's q, k and v once down is done and its last core has normed the
// rows. A core that claims a piece of the next product waits there for
// the one before, as it would at the fork's end, without the hand-off
// between forks: under load, a core the host took away held up every
// hand-off.
//
// Every element's arithmetic is the same, only where and when it runs
// changes: the same bits (TestDecodeFuseSameBits). Variables so a
// benchmark can compare them in one process (BenchmarkDecodeFuseTokens).
var decodeFuse = true

// fuseAttention has fusedQKV run attention in its fork (with decodeFuse).
var fuseAttention = true

// fuseLayer runs a dense layer as one fork (with decodeFuse and
// fuseAttention), fuseToken every layer of a step as one.
var fuseLayer, fuseToken = true, true

// fuseHead has a step's fork of every layer (fuseToken) run the final
// norm and the lm_head too when every row wants logits (decoding): the
// core that finishes the last layer's down norms the rows, as it does
// for the next layer's attention, and the lm_head's pieces are the fork's
// last phase, without the fork's end, the serial norm and the next fork's
// offer between them. The same bits: each logit is the same row's
// product (matRows) of the same normed vector.
var fuseHead = true

// fuseLoRA lets rows with adapters take the fused fork (with
// decodeFuse): each phase's adapter A-products (A·x, rank × the input,
// which the phase has whole at its start) are the phase's first pieces,
// and each piece of output rows adds B·(A·x) to them after the base
// product (and, for q, k and v, after the bias, in finishHead), as
// biasLoRA does to the whole product: the same bits. Off, an adapter
// row's step takes a fork a product, and each adapter product runs on
// the calling core.
var fuseLoRA = true

// fuseBF16 lets the bf16 compute path (LoadOptions.BF16Compute: matrices
// with a packed copy, mat.vn) take the fused fork (with decodeFuse): each
// phase's input is rounded and packed to bfloat16 once, by the core that
// opens the phase (packPhase), and every piece of the phase's matrices
// reads that copy (bf16Rows), where matMulBF16Group rounds it once a
// fork; attention on that path (attentionBF16) runs a KV head at a time
// inside the fork (attendBF16Head) as attendRow does on the float32
// path. Each output is the same kernels' one accumulator over the same
// rounded values: the same bits. Off, such a step takes a fork a
// product.
var fuseBF16 = true

// fuseBlock is the rows of SwiGLU's blocks (fusedGateUp): whole 16-row
// blocks of the pieces, small enough that the last piece's core has
// little left to do after it.
const fuseBlock = 128

// The matrices of a fused fork, in cut order: each KV head's group is
// complete once its query heads are, spread over q's pieces.
const (
	fuseK = iota
	fuseV
	fuseQ
	fuseO
	fuseGate
	fuseUp
	fuseDown
	fuseMats
)

// fusePhase is each matrix's phase in a layer's fork: a piece of phase k
// starts once phase k-1 is done (fuseState.ready); a fork of several
// layers has fusePhases a layer.
var fusePhase = [fuseMats]int{fuseK: 0, fuseV: 0, fuseQ: 0, fuseO: 1, fuseGate: 2, fuseUp: 2, fuseDown: 3}

const fusePhases = 4

// fuseState is a workspace's state of its fused forks, with their piece
// function made once: made per fork, the closures and their captures
// were allocations, fresh memory on every token (kvPool). A fork runs
// the matrices first to last of layers l0 on, matrix m of layer l being
// number (l-l0)·fuseMats + m.
type fuseState struct {
	m    *Model
	ws   *workspace
	rows []row
	xn   [][]float32
	l0   int
	head bool // the fork's last matrix is the lm_head (fuseHead), into logits

	first, last int // the fork's matrices
	xs, yss     [fuseMats][][]float32
	attend      bool
	ps, cut     []rowPiece
	cutMats     []mat

	// Counters, per layer (per apart): rows finished of each head (k, v,
	// q), query and KV heads finished of each group, groups attended, o's
	// and down's rows, the SwiGLU blocks' rows and the blocks done.
	cnt                                           []atomic.Int32
	heads, groups, attended, oRows, downRows, blk int // offsets in a layer's counters
	blocks, blocksDone, per                       int
	ready                                         []atomic.Int32 // phase k may start
	failed                                        atomic.Bool    // a piece panicked: no phase waits
	piece                                         func(i int)

	// The rows' adapters (fuseLoRA), one group per adapter (at most
	// fuseMaxRows: the fused fork's rows); aState is, per layer, matrix and
	// group, its A-product's state: aTodo, aBusy or aDone (the lm_head's
	// as matrix 0 of the layer past the fork's last).
	lgroups []fuseLoRAGroup
	aState  int // offset in a layer's counters
	ng      int // A-product states a matrix: max(1, len(lgroups))

	// The bf16 path's packed inputs (fuseBF16), by fuseXB's slot: xb[s]
	// is the current phase's, in xbuf[s]'s memory.
	xb, xbuf [3][]uint16
}

// fuseXB is the packed input (fuseState.xb) each matrix reads: 0 the
// normed rows (k, v, q, gate, up and the lm_head), 1 attention's output
// (o), 2 SwiGLU's (down).
var fuseXB = [fuseMats]int{fuseO: 1, fuseDown: 2}

// phaseFirst is the first matrix of each of a layer's phases.
var phaseFirst = [fusePhases]int{fuseK, fuseO, fuseGate, fuseDown}

// fuseLoRAGroup is the rows of one adapter in a fused fork: their inputs
// and outputs of each matrix (the lm_head's at index fuseMats) and the
// A-products (ts), rank floats a row.
type fuseLoRAGroup struct {
	l          *LoRA
	idx        []int // the rows, in order
	xs, ys, ts [fuseMats + 1][][]float32
	slab       []float32 // the ts' floats
}

// fuse readies ws's fused fork over the rows' matrices first to last of
// layers l0 on.
func (ws *workspace) fuse(m *Model, rows []row, xn [][]float32, l0, first, last int) *fuseState {
	f := &ws.fz
	if f.piece == nil {
		f.piece = f.runPiece
	}
	c := m.cfg
	lw := &m.w.layers[l0]
	n := len(xn)
	f.m, f.ws, f.rows, f.xn, f.l0, f.first, f.last = m, ws, rows, xn, l0, first, last
	f.head = false
	f.xs = [fuseMats][][]float32{xn, xn, xn, ws.att[:n], xn, xn, ws.g[:n]}
	f.yss = [fuseMats][][]float32{ws.k[:n], ws.v[:n], ws.q[:n], ws.x[:n], ws.g[:n], ws.u[:n], ws.x[:n]}
	for w := first; w <= min(last, fuseMats-1); w++ {
		for b := range f.yss[w] {
			f.yss[w][b] = f.yss[w][b][:f.mat(l0, w).rows]
		}
	}
	kvh := c.KVHeads
	f.heads, f.groups = 0, 2*kvh+c.Heads
	f.attended = f.groups + kvh
	f.oRows = f.attended + 1
	f.downRows = f.oRows + 1
	f.blk = f.downRows + 1
	f.blocks = (lw.gate.rows + fuseBlock - 1) / fuseBlock
	f.blocksDone = f.blk + f.blocks
	f.aState = f.blocksDone + 1
	f.groupLoRAs(n)
	f.ng = max(1, len(f.lgroups))
	f.per = f.aState + f.ng*fuseMats
	layers := last/fuseMats + 1
	if len(f.cnt) < layers*f.per {
		f.cnt = make([]atomic.Int32, layers*f.per)
	}
	for i := range f.cnt[:layers*f.per] {
		f.cnt[i].Store(0)
	}
	if len(f.ready) < layers*fusePhases {
		f.ready = make([]atomic.Int32, layers*fusePhases)
	}
	for i := range f.ready[:layers*fusePhases] {
		f.ready[i].Store(0)
	}
	f.attend = false
	f.failed.Store(false)
	return f
}

// groupLoRAs groups the fork's n rows by adapter (ws.loras) into
// f.lgroups, none when no row has one, with each group's inputs and
// outputs of every matrix (the lm_head's outputs are set by setHead) and
// room for its A-products.
func (f *fuseState) groupLoRAs(n int) {
	f.lgroups = f.lgroups[:0]
	ls := f.ws.loras
	if len(ls) < n {
		return // a fork whose rows are not the step's (none today)
	}
	for i, l := range ls[:n] {
		if l == nil || slices.Contains(ls[:i], l) {
			continue
		}
		if len(f.lgroups) < cap(f.lgroups) {
			f.lgroups = f.lgroups[:len(f.lgroups)+1]
		} else {
			f.lgroups = append(f.lgroups, fuseLoRAGroup{})
		}
		g := &f.lgroups[len(f.lgroups)-1]
		g.l, g.idx = l, g.idx[:0]
		for b, lb := range ls[:n] {
			if lb == l {
				g.idx = append(g.idx, b)
			}
		}
		k := len(g.idx)
		g.slab = growTo(g.slab, (fuseMats+1)*k*l.Rank)
		for s := range fuseMats + 1 {
			g.xs[s], g.ys[s], g.ts[s] = g.xs[s][:0], g.ys[s][:0], g.ts[s][:0]
			for j, b := range g.idx {
				if s < fuseMats {
					g.xs[s] = append(g.xs[s], f.xs[s][b])
					g.ys[s] = append(g.ys[s], f.yss[s][b])
				} else {
					g.xs[s] = append(g.xs[s], f.xn[b])
				}
				o := (s*k + j) * l.Rank
				g.ts[s] = append(g.ts[s], g.slab[o:o:o+l.Rank])
			}
		}
	}
}

// setHead makes the fork's last matrix the lm_head, into ys.
func (f *fuseState) setHead(ys [][]float32) {
	f.head = true
	for g := range f.lgroups {
		gr := &f.lgroups[g]
		gr.ys[fuseMats] = gr.ys[fuseMats][:0]
		for _, b := range gr.idx {
			gr.ys[fuseMats] = append(gr.ys[fuseMats], ys[b])
		}
	}
}

// slot is the fork's matrix gw's index in a group's xs, ys and ts, and
// its adapter pair of group g's adapter (nil: none).
func (f *fuseState) slot(gw int, g *fuseLoRAGroup) (int, *loraPair) {
	if f.head && gw == f.last {
		return fuseMats, g.l.pair(-1, 0)
	}
	l, m := f.layer(gw)
	return m, g.l.pair(l, [fuseMats]int{fuseK: modK, fuseV: modV, fuseQ: modQ, fuseO: modO, fuseGate: modGate, fuseUp: modUp, fuseDown: modDown}[m])
}

// The states of an A-product (fuseState.aState).
const (
	aTodo = iota
	aBusy // a core is computing it
	aDone
)

// loraA computes group g's A-product of the fork's matrix gw, unless a
// core did or is doing it: a piece of its own, first in gw's phase, or
// the first B-product that needs it (loraB).
func (f *fuseState) loraA(gw, g int) {
	l, m := f.layer(gw)
	st := f.at(l, f.aState+f.ng*m+g)
	if !st.CompareAndSwap(aTodo, aBusy) {
		return
	}
	gr := &f.lgroups[g]
	if s, lp := f.slot(gw, gr); lp != nil {
		t := gr.ts[s]
		for b := range t {
			t[b] = t[b][:lp.a.rows]
		}
		matRows(lp.a, gr.xs[s], t, 0, lp.a.rows, false)
	}
	st.Store(aDone)
}

// loraB adds each group's B·(A·x) to rows [lo, hi) of the fork's matrix
// gw's outputs: matMul's accumulate, row by row, as addLoRA adds it to
// the whole product. An A-product no core has started this core
// computes itself (loraA): the core that claimed its piece may be
// waiting for the phase or have lost its CPU, and a B-product waiting
// for it would hold up this core too. One another core is computing it
// waits for: its group's A-products are one per matrix and reused by the
// next layer's, so a phase must not end while one is being written.
func (f *fuseState) loraB(gw, lo, hi int) {
	l, m := f.layer(gw)
	for g := range f.lgroups {
		gr := &f.lgroups[g]
		s, lp := f.slot(gw, gr)
		if lp == nil {
			continue
		}
		f.loraA(gw, g)
		f.wait(f.at(l, f.aState+f.ng*m+g), aDone)
		matRows(lp.b, gr.ts[s], gr.ys[s], lo, hi, true)
	}
}

// mat is matrix m of layer l.
func (f *fuseState) mat(l, m int) mat {
	lw := &f.m.w.layers[l]
	return [fuseMats]mat{lw.k, lw.v, lw.q, lw.o, lw.gate, lw.up, lw.down}[m]
}

// matOf is the fork's matrix gw: the lm_head past the last layer's.
func (f *fuseState) matOf(gw int) mat {
	if f.head && gw == f.last {
		return f.m.w.lmHead
	}
	return f.mat(f.layer(gw))
}

// layer is the layer and matrix of the fork's matrix gw.
func (f *fuseState) layer(gw int) (l, m int) { return f.l0 + gw/fuseMats, gw % fuseMats }

// phase is the fork's phase of its matrix gw.
func (f *fuseState) phase(gw int) int { return gw/fuseMats*fusePhases + fusePhase[gw%fuseMats] }

// at is counter i of layer l.
func (f *fuseState) at(l, i int) *atomic.Int32 { return &f.cnt[(l-f.l0)*f.per+i] }

// open lets the pieces of phase k of layer l start, its input packed
// first when the phase is the fork's and on the bf16 path.
func (f *fuseState) open(l, k int) {
	f.packPhase((l-f.l0)*fuseMats + phaseFirst[k])
	f.ready[(l-f.l0)*fusePhases+k].Store(1)
}

// packPhase rounds and packs the input of the phase whose first matrix
// is the fork's gw (every matrix of a phase reads the same vectors),
// when gw is the fork's and on the bf16 path. A phase opens once the
// one before is done, so no piece still reads the slot it overwrites.
func (f *fuseState) packPhase(gw int) {
	if gw > f.last {
		return
	}
	w := f.matOf(gw)
	if w.vn == nil {
		return
	}
	_, m := f.layer(gw) // the lm_head's slot is k's: the normed rows
	s := fuseXB[m]
	f.xb[s] = packBF16Rows(f.xs[m], w.cols, &f.xbuf[s])
}

// product computes rows [lo, hi) of w over the fork's matrix gw's input
// xs into ys: from the phase's packed copy on the bf16 path.
func (f *fuseState) product(w mat, gw int, xs, ys [][]float32, lo, hi int, accumulate bool) {
	if w.vn != nil {
		_, m := f.layer(gw)
		bf16Rows(w, f.xb[fuseXB[m]], len(xs), ys, lo, hi, accumulate)
		return
	}
	matRows(w, xs, ys, lo, hi, accumulate)
}

// run cuts the fork's pieces and runs them on workers cores. Each phase
// is cut on its own, as its own fork would be: cut as one, the guided
// pieces of the first phases were a share of the whole layer's weights
// (k, v and o in one or two pieces each), and each phase ended with one
// core on a long last piece.
func (f *fuseState) run(workers int) {
	f.ps = f.ps[:0]
	f.packPhase(f.first)
	for lo := f.first; lo <= f.last; {
		f.cutMats = f.cutMats[:0]
		hi := lo
		for ; hi <= f.last && f.phase(hi) == f.phase(lo); hi++ {
			f.cutMats = append(f.cutMats, f.matOf(hi))
		}
		f.cut = decodeCut(f.cut[:0], f.cutMats, 16, workers) // a cut of BenchmarkDecodeCuts may not append to dst
		// The adapters' A-products first: the phase's B-products wait
		// for them (lo < 0: group -1-lo).
		for w := lo; w < hi; w++ {
			for g := range f.lgroups {
				f.ps = append(f.ps, rowPiece{w: w - f.first, lo: -1 - g})
			}
		}
		for _, p := range f.cut {
			p.w += lo - f.first
			f.ps = append(f.ps, p)
		}
		lo = hi
	}
	forkJoin(len(f.ps), f.piece)
	f.m, f.ws, f.rows, f.xn = nil, nil, nil, nil
	f.xs, f.yss = [fuseMats][][]float32{}, [fuseMats][][]float32{}
	clear(f.cutMats)
	for g := range f.lgroups {
		gr := &f.lgroups[g]
		gr.l = nil
		for s := range gr.xs {
			clear(gr.xs[s])
			clear(gr.ys[s])
		}
	}
}

// runPiece computes piece i, after waiting for its phase when the fork
// runs several, then the work its rows complete.
func (f *fuseState) runPiece(i int) {
	// A panic here on the calling goroutine ends the fork (forkJoin waits
	// for the workers inside it): mark the fork failed so that a worker
	// waiting for a phase this piece would have opened stops waiting.
	done := false
	defer func() {
		if !done {
			f.failed.Store(true)
		}
	}()
	p := f.ps[i]
	gw := f.first + p.w
	if k := f.phase(gw); k > f.phase(f.first) {
		f.await(k)
	}
	if p.lo < 0 {
		f.loraA(gw, -1-p.lo)
		done = true
		return
	}
	if f.head && gw == f.last {
		f.product(f.m.w.lmHead, gw, f.xn, f.ws.logits[:len(f.xn)], p.lo, p.hi, false)
		f.loraB(gw, p.lo, p.hi)
		done = true
		return
	}
	l, m := f.layer(gw)
	f.product(f.mat(l, m), gw, f.xs[m], f.yss[m], p.lo, p.hi, m == fuseO || m == fuseDown)
	if m > fuseQ {
		f.loraB(gw, p.lo, p.hi) // q's, k's and v's after their bias, in finishHead
	}
	c := f.m.cfg
	switch m {
	case fuseK, fuseV, fuseQ:
		f.qkvPiece(l, m, p)
	case fuseO:
		if f.at(l, f.oRows).Add(int32(p.hi-p.lo)) == int32(c.Hidden) {
			for i := range f.xn {
				rmsNorm(f.xn[i], f.ws.x[i], f.m.w.layers[l].mlpNorm, c.RMSNormEps)
			}
			f.open(l, 2)
		}
	case fuseGate, fuseUp:
		f.gateUpPiece(l, p)
	case fuseDown:
		// The next layer's attention norm, or the final norm before the
		// lm_head, when the fork runs it.
		if (l+1-f.l0)*fuseMats <= f.last && f.at(l, f.downRows).Add(int32(p.hi-p.lo)) == int32(c.Hidden) {
			norm := f.m.w.norm
			if l+1 < len(f.m.w.layers) {
				norm = f.m.w.layers[l+1].attnNorm
			}
			for i := range f.xn {
				rmsNorm(f.xn[i], f.ws.x[i], norm, c.RMSNormEps)
			}
			f.open(l+1, 0)
		}
	}
	done = true
}

// fuseWaitSpin is how long a core that claimed a piece of the next phase
// spins for the phase before before it naps: the other core may have lost
// its CPU holding the phase's last piece. As long as a worker's spin
// between forks (spinFor): naps after 20 µs (finishSpin) made the layer's
// fork take 1.18x the forks' wall time.
const fuseWaitSpin = spinFor

// await returns once the fork's phase k may start.
func (f *fuseState) await(k int) { f.wait(&f.ready[k], 1) }

// wait returns once v holds want, or a piece has failed: it spins, then
// yields, and past fuseWaitSpin naps.
func (f *fuseState) wait(v *atomic.Int32, want int32) {
	var t0 time.Time
	for spins := 0; v.Load() != want && !f.failed.Load(); spins++ {
		if spins%64 != 63 {
			continue
		}
		if t0.IsZero() {
			t0 = time.Now()
		} else if time.Since(t0) > fuseWaitSpin {
			time.Sleep(10 * time.Microsecond)
			continue
		}
		runtime.Gosched()
	}
}

// fuseMaxRows is the most rows a step takes the fused path with: a
// group of sequences sampled together decodes 4-16 rows a step, and the
// tile kernels take any rows of a piece as they take a fork's. Fused
// against forks a product, step-paired (BenchmarkDecodeRows,
// ROWS_SWITCH=fuse16, with 3 as the old limit), the 0.6B shape's steps
// of 4, 8 and 16 rows took 1.23, 1.22 and 1.12x less time on bfloat16
// weights, 1.20, 1.20 and 1.12x on the bf16 compute path; the tiny
// models and the 0.6B shape in float32 gain too
// (docs/engine-decoding.md, "The fused fork on small models"), so no work
// threshold keeps small steps out. A variable for that switch.
var fuseMaxRows = 16

// fuseWorkers is how many cores a fused fork of ms over xs runs on, or 0
// when the step does not take the fused path: a step of up to
// fuseMaxRows rows (matMulGroup's fork takes decoding's one to three),
// the bf16 compute path with fuseBF16, adapters with fuseLoRA.
func fuseWorkers(ls []*LoRA, xs [][]float32, ms ...mat) int {
	if !decodeFuse || len(xs) > fuseMaxRows || !fuseLoRA && slices.ContainsFunc(ls, func(l *LoRA) bool { return l != nil }) {
		return 0
	}
	if workers := fuseGroupWorkers(ms, len(xs)); workers > 1 {
		return workers
	}
	return 0
}

// fuseGroupWorkers is groupWorkers for a fused fork: matrices on the bf16
// path (fuseBF16) count as the others do, since the fork packs each
// phase's vectors once (packPhase).
func fuseGroupWorkers(ms []mat, n int) int {
	if !fuseBF16 {
		return groupWorkers(ms, n)
	}
	return workWorkers(ms, n)
}

// qkvShaped reports whether layer lw's q, k and v are whole heads.
func (c Config) qkvShaped(lw *layerWeights) bool {
	hd := c.HeadDim
	return hd > 0 && c.KVHeads > 0 && c.Heads%c.KVHeads == 0 &&
		lw.q.rows == c.Heads*hd && lw.k.rows == c.KVHeads*hd && lw.v.rows == c.KVHeads*hd
}

// fusedLayers runs every layer as one fork (fuseToken), or layer li as
// one (fuseLayer), from its q, k and v products to its down product's sum
// into the residual, the first layer's attention norm done before. It
// returns the layers it ran, none when the step does not take that path,
// and whether the fork ran the final norm and the lm_head too (fuseHead:
// every row's logits in ws.logits).
func (m *Model) fusedLayers(ws *workspace, rows []row, li int, xn [][]float32) (layers int, head bool) {
	c := m.cfg
	n := len(rows)
	if !fuseLayer || !fuseAttention {
		return 0, false
	}
	l1 := li
	if fuseToken && li == 0 {
		l1 = len(m.w.layers) - 1
	}
	workers := 0
	for l := li; l <= l1; l++ {
		lw := &m.w.layers[l]
		if lw.mla != nil || lw.moe != nil || lw.oBias != nil || !c.qkvShaped(lw) || lw.gate.rows != lw.up.rows {
			if l == li {
				return 0, false
			}
			l1 = li // a layer the fork cannot run: this one alone
			break
		}
		w := fuseWorkers(ws.loras, xn[:n], lw.q, lw.k, lw.v, lw.o, lw.gate, lw.up, lw.down)
		if w == 0 || l > li && w != workers {
			if l == li {
				return 0, false
			}
			l1 = li
			break
		}
		workers = w
	}
	ws.scores = growTo(ws.scores, c.KVHeads)
	last := (l1-li)*fuseMats + fuseDown
	head = fuseHead && l1 == len(m.w.layers)-1 &&
		!slices.ContainsFunc(rows, func(r row) bool { return !r.logits }) &&
		fuseWorkers(ws.loras, xn[:n], m.w.lmHead) == workers
	if head {
		last++ // the lm_head, after the last layer's matrices
		ws.logits = grow(ws.logits, n, c.VocabSize)
	}
	f := ws.fuse(m, rows, xn[:n], li, fuseK, last)
	if head {
		f.setHead(ws.logits[:n])
	}
	f.attend = true
	m.bf16AttnPrep(rows, li, l1)
	f.run(workers)
	return l1 - li + 1, head
}

// fusedQKV is layer li's q, k and v products over xn with each head
// finished inside the fork (decodeFuse), and each KV head's attention when
// attention is on the float32 path. It reports whether it ran (false: it
// did nothing, the step does not take the fused path) and whether it
// attended.
func (m *Model) fusedQKV(ws *workspace, rows []row, li int, xn [][]float32) (fused, attended bool) {
	c := m.cfg
	lw := &m.w.layers[li]
	n := len(rows)
	workers := fuseWorkers(ws.loras, xn[:n], lw.q, lw.k, lw.v)
	if workers == 0 || !c.qkvShaped(lw) {
		return false, false
	}
	f := ws.fuse(m, rows, xn[:n], li, fuseK, fuseQ)
	// Attention here, each KV head with its own scratch; on the bf16
	// path with fuseBF16 (which the step took to get here).
	f.attend = fuseAttention && (lw.o.vn == nil || fuseBF16)
	if f.attend {
		ws.scores = growTo(ws.scores, c.KVHeads)
		m.bf16AttnPrep(rows, li, li)
	}
	attended = f.attend
	f.run(workers)
	return true, attended
}

// qkvPiece counts piece p of layer l's matrix w into its heads, finishing
// each head it completes and attending each KV head whose heads are all
// finished.
func (f *fuseState) qkvPiece(l, w int, p rowPiece) {
	c := f.m.cfg
	hd, group := c.HeadDim, c.Heads/c.KVHeads
	first := [3]int{fuseK: 0, fuseV: c.KVHeads, fuseQ: 2 * c.KVHeads}[w]
	for h := p.lo / hd; h*hd < p.hi; h++ {
		done := min(p.hi, (h+1)*hd) - max(p.lo, h*hd)
		if f.at(l, f.heads+first+h).Add(int32(done)) != int32(hd) {
			continue
		}
		f.finishHead(l, w, h)
		if !f.attend {
			continue
		}
		kvh := h
		if w == fuseQ {
			kvh = h / group
		}
		if f.at(l, f.groups+kvh).Add(1) != int32(2+group) {
			continue
		}
		bf16 := f.m.bf16Attention(l)
		if bf16 {
			f.m.attendBF16Head(f.ws, f.rows, l, kvh)
		} else {
			for i := range f.rows {
				f.m.attendRow(f.ws, f.rows, i, l, kvh, kvh, kvh+1)
			}
		}
		if f.at(l, f.attended).Add(1) == int32(c.KVHeads) {
			if bf16 {
				bf16AttnDone(f.rows, l)
			}
			f.open(l, 1)
		}
	}
}

// finishHead adds head h's bias to layer l's matrix w's output, then for
// q and k applies the norm and rope and copies k and v into the caches,
// as the unfused step does for the whole rows (Model.qkv).
func (f *fuseState) finishHead(l, w, h int) {
	c := f.m.cfg
	lw := &f.m.w.layers[l]
	hd, kvd := c.HeadDim, c.KVHeads*c.HeadDim
	lo, hi := h*hd, (h+1)*hd
	bias := [3][]float32{fuseK: lw.kBias, fuseV: lw.vBias, fuseQ: lw.qBias}[w]
	qn, kn := lw.headNorms()
	if bias != nil {
		for i := range f.rows {
			y := f.yss[w][i][lo:hi]
			for j, v := range bias[lo:hi] {
				y[j] += v
			}
		}
	}
	f.loraB((l-f.l0)*fuseMats+w, lo, hi)
	for i, r := range f.rows {
		y := f.yss[w][i][lo:hi]
		switch w {
		case fuseQ:
			c.normRope(y, qn, f.ws.cos[i], f.ws.sin[i])
		case fuseK:
			c.normRope(y, kn, f.ws.cos[i], f.ws.sin[i])
			copy(r.seq.k[l][r.pos*kvd+lo:r.pos*kvd+hi], y)
		default:
			copy(r.seq.v[l][r.pos*kvd+lo:r.pos*kvd+hi], y)
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
	workers := fuseWorkers(ws.loras, xn, lw.gate, lw.up)
	if workers == 0 || lw.gate.rows != lw.up.rows {
		return false
	}
	ws.fuse(m, nil, xn, li, fuseGate, fuseUp).run(workers)
	return true
}

// gateUpPiece counts piece p's rows of layer l into their blocks and
// applies SwiGLU to each block it completes.
func (f *fuseState) gateUpPiece(l int, p rowPiece) {
	rows := f.mat(l, fuseGate).rows
	g, u := f.yss[fuseGate], f.yss[fuseUp]
	for k := p.lo / fuseBlock; k*fuseBlock < p.hi; k++ {
		lo, hi := k*fuseBlock, min((k+1)*fuseBlock, rows)
		done := min(p.hi, hi) - max(p.lo, lo)
		if f.at(l, f.blk+k).Add(int32(done)) != int32(2*(hi-lo)) {
			continue
		}
		for b := range g {
			siluMul(g[b][lo:hi], g[b][lo:hi], u[b][lo:hi])
		}
		if f.at(l, f.blocksDone).Add(1) == int32(f.blocks) {
			f.open(l, 3)
		}
	}
}
