package engine

import (
	"cmp"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
)

// kvCache holds one sequence's keys and values: per layer, positions × kw
// floats of k and positions × vw of v (Config.cacheWidths: kvDim each, or
// for latent attention the latent alone in k and no v). It grows as
// positions are added (doubling), so a request's memory follows what it
// generates rather than its max_tokens.
type kvCache struct {
	k, v   [][]float32
	n      int          // positions filled
	kw, vw int          // floats per position of k and of v
	bf16   *bf16KVCache // the bf16 path's copy (kernels_bf16_attn_amd64.go); nil until used

	alias    *kvAliasRow // non-nil: k and v map a prompt's memory file (kvalias.go); never pooled
	aliasSrc *kvAliasSrc // the memory file of this prompt cache's samples, if made
}

func (m *Model) newCache(capacity int) *kvCache {
	kw, vw := m.cfg.cacheWidths()
	if c := m.kvPool().take(m.cfg.Layers, kw, vw, capacity); c != nil {
		return c
	}
	c := &kvCache{k: make([][]float32, m.cfg.Layers), v: make([][]float32, m.cfg.Layers), kw: kw, vw: vw}
	c.reserve(capacity)
	return c
}

// kvPool is where the batcher keeps finished sequences' caches for the
// next ones, or nil for a model without one.
func (m *Model) kvPool() *kvPool {
	if m.batch == nil {
		return nil
	}
	return &m.batch.kv
}

// size is how many positions c has room for.
func (c *kvCache) size() int { return len(c.k[0]) / c.kw }

// bytes is the memory of c's keys and values.
func (c *kvCache) bytes() int { return 4 * len(c.k) * c.size() * (c.kw + c.vw) }

// reserve makes room for positions [0, n). A cache aliasing its prompt
// (kvalias.go) grows into memory of its own; its mapping is released
// where the cache is dropped, as nothing may still hold a slice of it
// before.
func (c *kvCache) reserve(n int) {
	if len(c.k) == 0 || len(c.k[0]) >= n*c.kw {
		return
	}
	size := max(n, 2*len(c.k[0])/c.kw)
	for l := range c.k {
		k, v := make([]float32, size*c.kw), make([]float32, size*c.vw)
		copy(k, c.k[l][:c.n*c.kw])
		copy(v, c.v[l][:c.n*c.vw])
		c.k[l], c.v[l] = k, v
	}
}

// clone copies the first n filled positions into a new cache with room for
// capacity positions, one of pool's when it has one.
func (c *kvCache) clone(n, capacity int, pool *kvPool) *kvCache {
	n = min(n, c.n)
	size := max(capacity, n)
	d := pool.take(len(c.k), c.kw, c.vw, size)
	if d == nil {
		d = &kvCache{k: make([][]float32, len(c.k)), v: make([][]float32, len(c.v)), kw: c.kw, vw: c.vw}
		for l := range c.k {
			d.k[l] = make([]float32, size*c.kw)
			d.v[l] = make([]float32, size*c.vw)
		}
	}
	d.n = n
	for l := range c.k {
		copy(d.k[l], c.k[l][:n*c.kw])
		copy(d.v[l], c.v[l][:n*c.vw])
	}
	return d
}

// row is one token to run through the model: token at position pos of the
// sequence whose cache is seq, with adapter lora (nil: the base model).
// Rows of one sequence must be consecutive positions, in order, starting at
// seq.n. Rows of different sequences may use different adapters of the
// same base model.
type row struct {
	seq    *kvCache
	token  int
	pos    int
	logits bool // compute logits for this row
	lora   *LoRA
}

// workspace holds the activations of one forward call, reused across steps.
type workspace struct {
	x, xn, q, k, v, att, g, u [][]float32
	sum                       [][]float32 // linearAdd's products
	cos, sin                  [][]float32
	loraT                     [][]float32
	loras, headLoras          []*LoRA     // per row; per logits row
	gx, gy                    [][]float32 // one adapter's rows of a mixed batch
	logits                    [][]float32
	scores                    [][]float32    // per attention worker
	scoreBusy                 []atomic.Bool  // scores in use in a fused fork (scoreSlot)
	attnBlk                   []blockScratch // per attention worker
	attnUnits                 []attnUnit
	moe                       moeScratch  // mixture-of-experts layers
	fz                        fuseState   // fused forks (forward_fuse.go)
	mla                       mlaScratch  // latent attention layers (mla.go)
	lr                        loraScratch // small batches' adapter products (lora_fork.go)
}

func grow(rows [][]float32, n, width int) [][]float32 {
	if len(rows) >= n && (n == 0 || len(rows[0]) == width) {
		return rows[:n]
	}
	slab := make([]float32, n*width)
	rows = make([][]float32, n)
	for i := range rows {
		rows[i] = slab[i*width : (i+1)*width : (i+1)*width]
	}
	return rows
}

// forward runs rows through the model, appending their keys and values to
// their sequences' caches, and returns logits for rows that asked for them
// (indexed like rows; nil for the others). The returned slices are owned by
// ws and valid until its next use.
func (m *Model) forward(ws *workspace, rows []row) [][]float32 {
	c := m.cfg
	w := m.w
	n := len(rows)
	h, qd, kvd := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	ws.x = grow(ws.x, n, h)
	ws.xn = grow(ws.xn, n, h)
	ws.q = grow(ws.q, n, qd)
	ws.k = grow(ws.k, n, kvd)
	ws.v = grow(ws.v, n, kvd)
	ws.att = grow(ws.att, n, qd)
	ws.g = grow(ws.g, n, c.Intermediate)
	ws.u = grow(ws.u, n, c.Intermediate)
	ws.cos = grow(ws.cos, n, c.HeadDim/2)
	ws.sin = grow(ws.sin, n, c.HeadDim/2)
	ws.loras = ws.loras[:0]
	rank := 0
	for _, r := range rows {
		ws.loras = append(ws.loras, r.lora)
		if r.lora != nil {
			rank = max(rank, r.lora.Rank)
		}
	}
	if rank > 0 {
		ws.loraT = grow(ws.loraT, n, rank)
	}
	for _, r := range rows {
		r.seq.reserve(r.pos + 1)
	}
	eachRow(n, h, func(i int) {
		w.embed.rowInto(rows[i].token, ws.x[i])
		ropeTable(m.invFreq, m.ropeScale, rows[i].pos, ws.cos[i], ws.sin[i])
	})
	xn := ws.xn
	head := false // the fused fork computed every row's logits (fuseHead)
	for li := 0; li < len(w.layers); li++ {
		lw := &w.layers[li]
		if lw.mla != nil {
			m.mlaLayer(ws, rows, li)
			continue
		}
		ls := ws.loras
		eachRow(n, h, func(i int) { rmsNorm(xn[i], ws.x[i], lw.attnNorm, c.RMSNormEps) })
		if k, h := m.fusedLayers(ws, rows, li, xn); k > 0 {
			li += k - 1
			head = h
			continue
		}
		fused, attended := m.fusedQKV(ws, rows, li, xn)
		if !fused {
			m.qkv(ws, rows, li, xn)
		}
		if !attended {
			m.attention(ws, rows, li)
		}
		m.linearAdd(ws, lw.o, lw.oBias, ls, li, modO, ws.att, ws.x)
		eachRow(n, h, func(i int) { rmsNorm(xn[i], ws.x[i], lw.mlpNorm, c.RMSNormEps) })
		if lw.moe != nil {
			m.moeMLP(ws, li, xn[:n], ws.x)
			continue
		}
		if !m.fusedGateUp(ws, li, xn) {
			m.linears(ws, ls, li, xn, []linearOp{{lw.gate, nil, modGate, ws.g}, {lw.up, nil, modUp, ws.u}})
			eachRow(n, c.Intermediate, func(i int) { siluMul(ws.g[i], ws.g[i], ws.u[i]) })
		}
		m.linearAdd(ws, lw.down, nil, ls, li, modDown, ws.g, ws.x)
	}
	for _, r := range rows {
		if r.pos+1 > r.seq.n {
			r.seq.n = r.pos + 1
		}
	}
	if head {
		return slices.Clone(ws.logits[:n])
	}
	// Logits only for the rows that need them: usually just the last one.
	var in, out [][]float32
	idx := make([]int, 0, n)
	ws.headLoras = ws.headLoras[:0]
	for i, r := range rows {
		if r.logits {
			rmsNorm(xn[i], ws.x[i], w.norm, c.RMSNormEps)
			in = append(in, xn[i])
			idx = append(idx, i)
			ws.headLoras = append(ws.headLoras, r.lora)
		}
	}
	ws.logits = grow(ws.logits, len(in), c.VocabSize)
	out = ws.logits
	m.linear(ws, w.lmHead, nil, ws.headLoras, -1, 0, in, out, false)
	res := make([][]float32, n)
	for k, i := range idx {
		res[i] = out[k]
	}
	return res
}

// qkv is layer li's q, k and v products over xn, then each row's q/k
// norms and rope and its keys' and values' copy into its cache: the
// unfused form of fusedQKV.
func (m *Model) qkv(ws *workspace, rows []row, li int, xn [][]float32) {
	c := m.cfg
	lw := &m.w.layers[li]
	n, qd, kvd := len(rows), c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	m.linears(ws, ws.loras, li, xn, []linearOp{
		{lw.q, lw.qBias, modQ, ws.q}, {lw.k, lw.kBias, modK, ws.k}, {lw.v, lw.vBias, modV, ws.v}})
	qn, kn := lw.headNorms()
	eachRow(n, qd+2*kvd, func(i int) {
		r := rows[i]
		c.normRope(ws.q[i], qn, ws.cos[i], ws.sin[i])
		c.normRope(ws.k[i], kn, ws.cos[i], ws.sin[i])
		copy(r.seq.k[li][r.pos*kvd:(r.pos+1)*kvd], ws.k[i])
		copy(r.seq.v[li][r.pos*kvd:(r.pos+1)*kvd], ws.v[i])
	})
}

// headNorms is the layer's q and k head norms, both nil when it has none
// (the k norm is applied only with the q norm, as Qwen3 has them).
func (lw *layerWeights) headNorms() (q, k []float32) {
	if lw.qNorm == nil {
		return nil, nil
	}
	return lw.qNorm, lw.kNorm
}

// normRope applies norm (when not nil) to each head of y, then rope, in
// place: a row's q or k (qkv) or one head of it (finishHead). Heads are
// independent, so either gives the same bits.
func (c Config) normRope(y, norm, cos, sin []float32) {
	if norm != nil {
		for h := 0; h < len(y); h += c.HeadDim {
			x := y[h : h+c.HeadDim]
			rmsNorm(x, x, norm, c.RMSNormEps)
		}
	}
	applyRope(y, c.HeadDim, cos, sin)
}

// linear computes ys = W·xs (+ bias) (+ LoRA), adding to ys when accumulate.
// loras[b] is row b's adapter (nil: none); layer and module name this
// matrix within an adapter (LoRA.pair).
func (m *Model) linear(ws *workspace, w mat, bias []float32, loras []*LoRA, layer, module int, xs, ys [][]float32, accumulate bool) {
	if len(xs) == 0 {
		return
	}
	for i := range ys[:len(xs)] {
		ys[i] = ys[i][:w.rows]
	}
	matMul(w, xs, ys, accumulate)
	m.biasLoRA(ws, bias, loras, layer, module, xs, ys)
}

// linearAdd is linear adding W·xs (+ bias) (+ LoRA) to ys, the residual
// stream. On the bf16 path without bias or adapters the product goes to
// a slab of its own, where the tiles store straight into the rows, and is
// then added on every core: through the kernels' buffer (bf16Put) the
// o and down products of the 0.6B shape took about 5% longer, paired on
// one core. y + (W·x) either way: the same bits.
func (m *Model) linearAdd(ws *workspace, w mat, bias []float32, loras []*LoRA, layer, module int, xs, ys [][]float32) {
	if w.vn == nil || bias != nil || slices.ContainsFunc(loras, func(l *LoRA) bool { return l != nil }) {
		m.linear(ws, w, bias, loras, layer, module, xs, ys, true)
		return
	}
	n := len(xs)
	ws.sum = grow(ws.sum, n, w.rows)
	m.linear(ws, w, nil, loras, layer, module, xs, ws.sum, false)
	eachRow(n, w.rows, func(i int) { axpy(ys[i][:w.rows], 1, ws.sum[i]) })
}

// linearOp is one of the products linears runs over the same vectors:
// W (+ bias) into ys, as LoRA module module.
type linearOp struct {
	w      mat
	bias   []float32
	module int
	ys     [][]float32
}

// linears runs linear for each op over the same vectors xs, the products
// in one fork: on the bf16 path when every matrix is on it (the vectors
// rounded once, matMulBF16Group), else matMulGroup. The same bits as one
// linear after another.
func (m *Model) linears(ws *workspace, loras []*LoRA, layer int, xs [][]float32, ops []linearOp) {
	if len(xs) == 0 {
		return
	}
	ms, yss := make([]mat, len(ops)), make([][][]float32, len(ops))
	bf16Path := true
	for i, op := range ops {
		ms[i] = op.w
		bf16Path = bf16Path && op.w.vn != nil && op.w.cols == ops[0].w.cols
		for b := range op.ys[:len(xs)] {
			op.ys[b] = op.ys[b][:op.w.rows]
		}
		yss[i] = op.ys[:len(xs)]
	}
	if bf16Path {
		matMulBF16Group(ms, xs, yss, false)
	} else {
		matMulGroup(ms, xs, yss)
	}
	var modArr [3]int
	mods := modArr[:0]
	for _, op := range ops {
		addBias(op.bias, xs, op.ys)
		mods = append(mods, op.module)
	}
	if ws.loraProducts(loras, layer, xs, mods, yss) {
		return
	}
	for _, op := range ops {
		m.addLoRAs(ws, loras, layer, op.module, xs, op.ys)
	}
}

// biasLoRA adds the bias and each row's adapter to the product ys = W·xs.
func (m *Model) biasLoRA(ws *workspace, bias []float32, loras []*LoRA, layer, module int, xs, ys [][]float32) {
	addBias(bias, xs, ys)
	mods, yss := [1]int{module}, [1][][]float32{ys[:len(xs)]}
	if ws.loraProducts(loras, layer, xs, mods[:], yss[:]) {
		return
	}
	m.addLoRAs(ws, loras, layer, module, xs, ys)
}

// addBias adds bias (when not nil) to each row of ys = W·xs.
func addBias(bias []float32, xs, ys [][]float32) {
	if bias != nil {
		for _, y := range ys[:len(xs)] {
			for j, b := range bias {
				y[j] += b
			}
		}
	}
}

// addLoRAs adds each row's adapter to ys = W·xs (+ bias), an adapter at
// a time (addLoRA).
func (m *Model) addLoRAs(ws *workspace, loras []*LoRA, layer, module int, xs, ys [][]float32) {
	for i, l := range loras {
		if l == nil || slices.Contains(loras[:i], l) {
			continue // base rows, or an adapter already applied
		}
		if lp := l.pair(layer, module); lp != nil {
			ws.addLoRA(lp, loras, l, xs, ys[:len(xs)])
		}
	}
}

// addLoRA adds adapter l's low-rank product lp to the rows that use l. The
// base product ran once over all rows; each adapter's runs over its own
// rows only, which gives the bits those rows get alone because every
// output element is summed in one fixed order.
func (ws *workspace) addLoRA(lp *loraPair, loras []*LoRA, l *LoRA, xs, ys [][]float32) {
	if !allSame(loras, l) {
		gx, gy := ws.gx[:0], ws.gy[:0]
		for b, lb := range loras {
			if lb == l {
				gx, gy = append(gx, xs[b]), append(gy, ys[b])
			}
		}
		ws.gx, ws.gy = gx, gy
		xs, ys = gx, gy
	}
	t := ws.loraT[:len(xs)]
	for b := range t {
		t[b] = t[b][:lp.a.rows]
	}
	matMul(lp.a, xs, t, false)
	matMul(lp.b, t, ys, true)
	for b := range t {
		t[b] = t[b][:cap(t[b])] // back to the widest rank, as grow made it
	}
}

func allSame(loras []*LoRA, l *LoRA) bool {
	for _, x := range loras {
		if x != l {
			return false
		}
	}
	return true
}

// attention computes ws.att for every row from the caches. A run of rows
// of one sequence at consecutive positions (a prefill chunk, a training
// sequence) goes in blocks of attnRows positions per KV head, which read
// each cached key and value once for the whole block (attendBlock); other
// rows go one at a time (attendRow). Both give the same bits, so a row's
// output does not depend on what else is in the batch. Whichever worker
// is free takes the next unit: grouped by KV head (so one head's keys and
// values stay in L2), largest first within a head.
func (m *Model) attention(ws *workspace, rows []row, layer int) {
	if m.attentionBF16(ws, rows, layer) { // kernels_bf16_attn_amd64.go
		return
	}
	units, work := m.attnUnits(ws, rows, layer)
	workers := min(runtime.GOMAXPROCS(0), len(units), max(1, work/parallelMinWork))
	ws.scores = growTo(ws.scores, workers)
	ws.attnBlk = growTo(ws.attnBlk, workers)
	forkJoinUnits(workers, len(units), func(u, wk int) {
		switch un := units[u]; {
		case un.blk > 0:
			m.attendRowBlocked(ws, rows, un.i, layer, wk, un.kvh, un.kvh+un.blk)
		case un.kvh < 0:
			m.attendRow(ws, rows, un.i, layer, wk, 0, m.cfg.KVHeads)
		case un.one:
			m.attendRow(ws, rows, un.i, layer, wk, un.kvh, un.kvh+1)
		default:
			m.attendBlock(ws, rows, un, layer, wk)
		}
	})
	for i := range ws.attnBlk {
		ws.attnBlk[i].head.seq = nil // packs last one call (and hold no cache)
	}
}

// growTo returns s with at least n elements.
func growTo[T any](s []T, n int) []T {
	if len(s) < n {
		s = append(s, make([]T, n-len(s))...)
	}
	return s
}

// attnRows is how many consecutive positions attendBlock takes at once:
// each cached key and value row is read once per attnRows × group queries.
const attnRows = 16

// attnUnit is one piece of a layer's attention: row i alone, every head
// (kvh < 0) or KV head kvh's query heads (one), or rows i..i+n-1,
// consecutive positions of one sequence, KV head kvh. work counts its
// multiply-adds, roughly.
type attnUnit struct {
	i, n, kvh, work int
	one             bool
	blk             int // > 0: lone row i's KV heads kvh..kvh+blk-1 together (attendRowBlocked)
}

// attnBlockedRows has a batch's lone rows at attnBlockedMinPos or past
// it attended by units of several KV heads a block of positions at a
// time (attendRowBlocked), as fuseAttnBlocked does in a fused fork: the
// steps of more rows than a fused fork takes. A variable for
// BenchmarkDecodeLong's LONG_SWITCH=rowsblk.
var attnBlockedRows = true

// attnSplitWork is the work of a lone row above which its KV heads are
// units of their own: decoding one sequence at long contexts otherwise
// reads the whole cache on one core (28 layers × 8 KiB a position on the
// Qwen3-0.6B shape: at 4,096 positions about as many bytes as its
// bfloat16 weights), while the other waits for the next product. Below
// it (the 0.6B shape: 256 positions) a fork costs more than it saves.
const attnSplitWork = 8 * parallelMinWork

// attnUnits splits rows into attention units, ordered by KV head (single
// rows first) and largest first within one, and returns them with their
// total work.
func (m *Model) attnUnits(ws *workspace, rows []row, layer int) ([]attnUnit, int) {
	c := m.cfg
	units, total := ws.attnUnits[:0], 0
	long := 0 // lone rows whose units go blocked
	for i := 0; attnBlockedRows && i < len(rows); i += runAt(rows, i) {
		if runAt(rows, i) == 1 && rows[i].pos >= attnBlockedMinPos {
			long++
		}
	}
	chunks := 0
	if long > 0 {
		chunks = blockedChunks(c.KVHeads, long)
	}
	for i := 0; i < len(rows); {
		n := runAt(rows, i)
		if n == 1 {
			units, total = m.rowUnits(units, total, rows, i, layer, chunks)
		}
		for b := 0; n > 1 && b < n; b += attnRows {
			nb, p := min(attnRows, n-b), rows[i+b].pos
			w := nb * (p - c.firstKey(layer, p) + nb) * c.Heads / c.KVHeads * c.HeadDim
			for kvh := range c.KVHeads {
				units, total = append(units, attnUnit{i: i + b, n: nb, kvh: kvh, work: w}), total+w
			}
		}
		i += n
	}
	slices.SortStableFunc(units, func(a, b attnUnit) int {
		return cmp.Or(cmp.Compare(a.kvh, b.kvh), cmp.Compare(b.work, a.work))
	})
	ws.attnUnits = units
	return units, total
}

// rowUnits appends lone row i's attention units: the whole row, or one
// unit per KV head when its work reaches attnSplitWork; at
// attnBlockedMinPos or past it with chunks > 0, chunks units of several
// KV heads, blocked. Each head's output is computed the same way either
// way: the same bits.
func (m *Model) rowUnits(units []attnUnit, total int, rows []row, i, layer, chunks int) ([]attnUnit, int) {
	c := m.cfg
	w := (rows[i].pos + 1 - c.firstKey(layer, rows[i].pos)) * c.Heads * c.HeadDim
	if chunks > 0 && rows[i].pos >= attnBlockedMinPos {
		hpu := c.KVHeads / chunks
		for ch := range chunks {
			units = append(units, attnUnit{i: i, n: 1, kvh: ch * hpu, work: w / chunks, blk: hpu})
		}
		return units, total + w
	}
	if w < attnSplitWork || c.KVHeads == 1 {
		return append(units, attnUnit{i: i, n: 1, kvh: -1, work: w}), total + w
	}
	for kvh := range c.KVHeads {
		units = append(units, attnUnit{i: i, n: 1, kvh: kvh, work: w / c.KVHeads, one: true})
	}
	return units, total + w
}

// runAt is how many rows from i on are consecutive positions of one
// sequence.
func runAt(rows []row, i int) int {
	n := 1
	for i+n < len(rows) && rows[i+n].seq == rows[i].seq && rows[i+n].pos == rows[i].pos+n {
		n++
	}
	return n
}

// attendBlock computes KV head u.kvh's part of the attention output of
// rows u.i..u.i+u.n-1: the scores of every query head of the group at
// every position against the keys it sees, their softmax (with GPT-OSS's
// sink), and the weighted sums of the values, with the blocked kernels
// (kernels_attn.go), giving attendRow's bits. In a sliding-window layer
// the block reads keys from the window start of its first position; a
// later position's scores before its own window start are computed but
// its probabilities there are zero, which add +0 to a sum still at +0,
// so its output has the bits of a sum that starts at its window.
func (m *Model) attendBlock(ws *workspace, rows []row, u attnUnit, layer, worker int) {
	c := m.cfg
	hd, kvd, group := c.HeadDim, c.KVHeads*c.HeadDim, c.Heads/c.KVHeads
	p0 := rows[u.i].pos
	lo := c.firstKey(layer, p0)
	rel := p0 - lo                            // the block's first position, counted from key lo
	ld, nq := scoreStride(rel+u.n), u.n*group // padded rows: see scoreStride
	if cap(ws.scores[worker]) < nq*ld {
		ws.scores[worker] = make([]float32, nq*ld*3/2)
	}
	sc := ws.scores[worker][:nq*ld]
	qs, outs, direct := ws.attnBlk[worker].pack(ws, u.i, u.n, u.kvh*group*hd, group, hd)
	seq, off := rows[u.i].seq, u.kvh*hd
	vals, vstride, voff := seq.v[layer][lo*kvd:], kvd, off
	keys, kstride, koff := seq.k[layer][lo*kvd:], kvd, off
	var tiles []float32
	if hp := ws.attnBlk[worker].head.get(seq, layer, u.kvh, hd, kvd, p0+u.n); hp != nil {
		vals, vstride, voff = hp.vals[lo*hd:], hd, 0
		if hp.keys != nil { // rows for the AVX2 kernels
			keys, kstride, koff = hp.keys[lo*hd:], hd, 0
		} else if lo%dotsTile == 0 { // the packed tiles start at key lo
			tiles = hp.tiles[lo*hd:]
		}
	}
	attnDotsBlockTiles(sc, ld, qs, group, rel, keys, kstride, koff, tiles)
	scale := float32(1 / math.Sqrt(float64(hd)))
	rs := ws.attnBlk[worker].rows[:0]
	for j := range qs {
		first := c.firstKey(layer, p0+j/group) - lo
		rs = append(rs, sc[j*ld+first:j*ld+rel+j/group+1])
		clear(sc[j*ld : j*ld+first])
	}
	ws.attnBlk[worker].rows = rs
	softmaxRows(rs, scale, m.sinks(layer), u.kvh*group, group)
	attnWeightedBlock(outs, sc, ld, group, rel, vals, vstride, voff)
	if direct {
		return // the sums went straight into the rows (blockScratch.pack)
	}
	for j, o := range outs {
		h := u.kvh*group + j%group
		copy(ws.att[u.i+j/group][h*hd:(h+1)*hd], o)
	}
}

// blockScratch is an attention worker's copy of a block's query heads and
// room for its output heads, each set contiguous: as rows of the batch
// they lie qd elements apart, which for 0.6B is 8 KiB, and the heads of
// a block then share a few L1 sets and evict one another.
type blockScratch struct {
	heads    []float32
	qs, outs [][]float32
	rows     [][]float32 // the queries' scores (softmaxRows)
	head     headPack
}

// pack copies the group heads from element off of query rows i..i+n-1
// into the scratch and returns them with zeroed output heads, in block
// order (position, then head). The output heads are those of ws.att
// itself when its rows i..i+n-1 are one slab: each query head's outputs
// are then evenly spaced, as the register tiles need (stridedRows), and
// the sums need no copy (it was a third of the forward's memmove).
func (b *blockScratch) pack(ws *workspace, i, n, off, group, hd int) (qs, outs [][]float32, direct bool) {
	nq := n * group
	if len(b.heads) < 2*nq*hd {
		b.heads = make([]float32, 2*nq*hd)
	}
	att := ws.att[i : i+n]
	direct = evenRows(att, len(att[0]))
	b.qs, b.outs = b.qs[:0], b.outs[:0]
	for j := range nq {
		q, o := b.heads[j*hd:(j+1)*hd], b.heads[(nq+j)*hd:(nq+j+1)*hd]
		if direct {
			o = att[j/group][off+j%group*hd:][:hd]
		}
		copy(q, ws.q[i+j/group][off+j%group*hd:])
		clear(o)
		b.qs, b.outs = append(b.qs, q), append(b.outs, o)
	}
	return b.qs, b.outs, direct
}

// attendRow computes one row's attention output for the query heads of KV
// heads [kv0, kv1): per query head, its scores against every cached key,
// then the probability-weighted sum of the cached values, each one kernel
// call over all positions (kernels_attn.go). Query heads that share a KV
// head are scored two at a time, so each key is read once per pair.
func (m *Model) attendRow(ws *workspace, rows []row, i, layer, worker, kv0, kv1 int) {
	c := m.cfg
	r := rows[i]
	hd, kvd := c.HeadDim, c.KVHeads*c.HeadDim
	group := c.Heads / c.KVHeads
	lo := c.firstKey(layer, r.pos) // 0 but in sliding-window layers
	npos := r.pos + 1 - lo
	if cap(ws.scores[worker]) < group*npos {
		ws.scores[worker] = make([]float32, 2*group*npos)
	}
	keys, vals := r.seq.k[layer][lo*kvd:], r.seq.v[layer][lo*kvd:]
	sinks := m.sinks(layer)
	scale := float32(1 / math.Sqrt(float64(hd)))
	q, out := ws.q[i], ws.att[i]
	for kvh := kv0; kvh < kv1; kvh++ {
		if attendKVHeadAsm(&ws.scores[worker], q, out, keys, vals, kvd, hd, group, npos, kvh, scale, sinks) {
			continue // kernels_attn_lone_amd64.go
		}
		sc := ws.scores[worker][:group*npos]
		off, h0 := kvh*hd, kvh*group
		g := 0
		for ; g+2 <= group; g += 2 {
			h := h0 + g
			attnDotsPair(sc[g*npos:(g+1)*npos], sc[(g+1)*npos:(g+2)*npos], q[h*hd:(h+1)*hd], q[(h+1)*hd:(h+2)*hd], keys, kvd, off)
		}
		if g < group {
			attnDots(sc[g*npos:(g+1)*npos], q[(h0+g)*hd:(h0+g+1)*hd], keys, kvd, off)
		}
		for g := range group {
			s, o := sc[g*npos:(g+1)*npos], out[(h0+g)*hd:(h0+g+1)*hd]
			scaleScores(s, scale)
			softmaxSink(s, sinks, h0+g)
			clear(o)
			attnWeighted(o, s, vals, kvd, off)
		}
	}
}

// attendRowBlocked is attendRow with KV heads [kv0, kv1) attended
// together a block of positions at a time (attendHeadsBlocked), or one
// at a time where those kernels do not run: the same bits either way.
func (m *Model) attendRowBlocked(ws *workspace, rows []row, i, layer, worker, kv0, kv1 int) {
	c := m.cfg
	r := rows[i]
	hd, kvd := c.HeadDim, c.KVHeads*c.HeadDim
	lo := c.firstKey(layer, r.pos)
	scale := float32(1 / math.Sqrt(float64(hd)))
	if !attendHeadsBlocked(&ws.scores[worker], ws.q[i], ws.att[i], r.seq.k[layer][lo*kvd:], r.seq.v[layer][lo*kvd:],
		kvd, hd, c.Heads/c.KVHeads, r.pos+1-lo, kv0, kv1, scale, m.sinks(layer)) {
		m.attendRow(ws, rows, i, layer, worker, kv0, kv1)
	}
}

// scaleScores multiplies every score by scale (1/√head dim).
func scaleScores(s []float32, scale float32) {
	if scaleVec(s, scale) {
		return
	}
	for t := range s {
		s[t] *= scale
	}
}
