package engine

import (
	"runtime"
	"sync"
)

// The training forward pass runs one datum's positions through the model
// with the same kernels, in the same order, as the sampling forward (so the
// logprobs are bit-identical to prompt logprobs of a sampler with the same
// adapter), keeping the activations the backward pass needs. The backward
// pass then propagates the loss gradient back to the LoRA parameters only.

// layerActs are one layer's kept activations (rows = positions).
type layerActs struct {
	x, xn1     [][]float32 // residual entering the layer, its attention norm
	qRaw, kRaw [][]float32 // q and k projections before Qwen3's q/k norms
	q, att     [][]float32 // q after norm and rotary; attention output
	x2, xn2    [][]float32 // residual after attention, its MLP norm
	g, u, h    [][]float32 // gate and up projections, silu(g)·u
	t          [7][][]float32
	moe        *moeActs // instead of g, u, h and the MLP's t in a mixture-of-experts layer
	mla        *mlaActs // latent attention's own (mla_train.go)
}

// Indices of layerActs.t: each adapted matrix's A·x.
const (
	tQ = iota
	tK
	tV
	tO
	tGate
	tUp
	tDown
)

// The output layer runs a datum's positions a chunk at a time, so that the
// vocabulary-wide logits of a long sequence never exist at once. Each chunk
// streams the whole output matrix from memory forward and again backward
// (622 MB on the 0.6B shape), and the backward product at M = 128 rows ran
// at 0.71 of the FMA loop against 0.82 at 512: a chunk is as many positions
// as headBytes of logits hold, in multiples of headChunk (512 on Qwen3's
// 151,936 words), never fewer than headChunk, never more than the datum. The
// logits are freed once the output layer is done, so the backward's layer
// scratch reuses them (docs/engine-training.md, "The output layer's chunk").
// The chunk changes no bits (TestHeadChunkKeepsBits, which shrinks it: hence
// variables).
var (
	headChunk = 128
	headBytes = 320 << 20
)

// headChunkRows is the chunk of the output layer for a datum of n positions.
func headChunkRows(n, vocab int) int {
	rows := max(1, headBytes/(4*vocab)/headChunk) * headChunk
	return min(n, rows)
}

// datumPass is the trip of one datum, or of a group of datums batched
// row after row (batchpass.go), through the model: the shared inputs of
// its forward layers, output layer and backward layers.
type datumPass struct {
	t        *Trainer
	c        Config
	ar       *arena
	slot     *datumSlot // where the datums' gradients go
	n        int        // rows: every datum's positions
	segs     []segment  // the datums' rows, in datum order
	cos, sin [][]float32
	cache    *kvCache // the first datum's (MLA and experts run one datum a pass)
	rowsAt   []row
	ws       *workspace
	acts     []layerActs
	inputs   [][][]float32 // every layer's input residual when recomputing (recompute.go)
	backward bool
}

// pass runs a group of datums forward (and backward when asked, into the
// slot's local gradients; a group of several commits them itself,
// batchpass.go) in the slot's arena, their rows one after another through
// each layer. It fills outs and losses, a datum each. It stops with
// checkCtx's error, checked before every layer.
func (t *Trainer) pass(slot *datumSlot, checkCtx func() error, l Loss, ds []Datum, outs []DatumOutput, losses []float64, backward bool) error {
	m := t.model
	c := m.cfg
	ps := t.newPass(slot, ds, backward)
	x := ps.ar.rows(ps.n, c.Hidden)
	for _, sg := range ps.segs {
		for p, tok := range ds[sg.d].ModelInput {
			m.w.embed.rowInto(tok, x[sg.off+p])
			ropeTable(m.invFreq, m.ropeScale, p, ps.cos[sg.off+p], ps.sin[sg.off+p])
			ps.rowsAt[sg.off+p] = row{seq: sg.cache, pos: p}
		}
	}
	if backward && len(ds) == 1 && t.recomputes(ps.n) {
		ps.inputs = ps.residuals(x)
	}
	x, err := ps.forwardLayers(x, checkCtx)
	if err != nil {
		return err
	}
	dxnF := ps.heads(l, ds, x, outs, losses)
	if !backward {
		return nil
	}
	dx := ps.ar.rows(ps.n, c.Hidden)
	for p := range ps.n {
		rmsNormBackward(dx[p], dxnF[p], x[p], m.w.norm, c.RMSNormEps)
	}
	lowest := 0 // the lowest layer with trained matrices
	if !t.cfg.TrainAttn && !t.cfg.TrainMLP {
		lowest = c.Layers
	}
	return ps.backwardLayers(lowest, dx, checkCtx)
}

// newPass starts a pass over ds in slot's arena: the rotary tables and
// each datum's cache.
func (t *Trainer) newPass(slot *datumSlot, ds []Datum, backward bool) *datumPass {
	c := t.model.cfg
	ps := &datumPass{t: t, c: c, ar: slot.ar, slot: slot, backward: backward, ws: &slot.ws, acts: make([]layerActs, c.Layers)}
	ps.ar.reset()
	for i := range ds {
		n := len(ds[i].ModelInput)
		cache := &kvCache{k: make([][]float32, c.Layers), v: make([][]float32, c.Layers), n: n}
		ps.segs = append(ps.segs, segment{d: i, off: ps.n, n: n, cache: cache})
		ps.n += n
	}
	ps.cache = ps.segs[0].cache
	ps.cos, ps.sin = ps.ar.rows(ps.n, c.HeadDim/2), ps.ar.rows(ps.n, c.HeadDim/2)
	ps.rowsAt = make([]row, ps.n)
	return ps
}

// tRows allocates the rows of A·x for an adapted matrix, nil for a frozen one.
func (ps *datumPass) tRows(mod *trainModule) [][]float32 {
	if mod == nil {
		return nil
	}
	return ps.ar.rowsToFill(ps.n, ps.t.cfg.Rank) // A·x overwrites them
}

// forwardLayer runs layer li on the residual x and returns the next
// residual. With a backward pass to come it keeps the layer's activations;
// without, it writes into spare, frees its scratch and returns the old x as
// the next spare.
func (ps *datumPass) forwardLayer(li int, x, spare [][]float32) (next, nextSpare [][]float32) {
	m, c, ar, n := ps.t.model, ps.c, ps.ar, ps.n
	h, qd, kvd := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	lw, tl, a := &m.w.layers[li], &ps.t.layers[li], &ps.acts[li]
	if lw.mla != nil {
		return ps.mlaForwardLayer(li, x, spare)
	}
	mark := ar.mark()
	a.x = x
	a.xn1 = ar.rowsToFill(n, h)
	eachRow(n, h, func(p int) { rmsNorm(a.xn1[p], x[p], lw.attnNorm, c.RMSNormEps) })
	a.q = ar.rowsToFill(n, qd)
	ks, vs := ar.takeToFill(n*kvd), ar.takeToFill(n*kvd)
	ps.setCache(li, ks, vs, kvd)
	k, v := ar.view(ks, n, kvd), ar.view(vs, n, kvd)
	a.t[tQ], a.t[tK], a.t[tV] = ps.tRows(tl.q), ps.tRows(tl.k), ps.tRows(tl.v)
	qOut, kOut := a.q, k
	if lw.qNorm != nil { // the products write the raw q and k, the norms a.q and k from them
		a.qRaw, a.kRaw = ar.rowsToFill(n, qd), ar.rowsToFill(n, kvd)
		qOut, kOut = a.qRaw, a.kRaw
	}
	in := packIn(lw.q, a.xn1) // q, k and v read it packed once
	in.linear(lw.q, lw.qBias, tl.q, a.xn1, qOut, a.t[tQ], false)
	in.linear(lw.k, lw.kBias, tl.k, a.xn1, kOut, a.t[tK], false)
	in.linear(lw.v, lw.vBias, tl.v, a.xn1, v, a.t[tV], false)
	in.release()
	eachRow(n, qd+kvd, func(p int) {
		if lw.qNorm != nil {
			headNorms(a.q[p], a.qRaw[p], lw.qNorm, c.HeadDim, c.RMSNormEps)
			headNorms(k[p], a.kRaw[p], lw.kNorm, c.HeadDim, c.RMSNormEps)
		}
		applyRope(a.q[p], c.HeadDim, ps.cos[p], ps.sin[p])
		applyRope(k[p], c.HeadDim, ps.cos[p], ps.sin[p])
	})
	a.att = ar.rows(n, qd)
	ps.ws.q, ps.ws.att = a.q, a.att
	m.attention(ps.ws, ps.rowsAt, li)
	a.x2 = ar.rowsToFill(n, h)
	eachRow(n, h, func(p int) { copy(a.x2[p], x[p]) })
	a.t[tO] = ps.tRows(tl.o)
	trainLinear(lw.o, lw.oBias, tl.o, a.att, a.x2, a.t[tO], true)
	return ps.mlpBlock(li, mark, x, spare)
}

// mlpBlock finishes layer li from a.x2, the residual after attention: the
// MLP norm, the next residual (spare without a backward pass to come) and
// the MLPs, the experts' and (dense layers, DeepSeek's shared experts) the
// dense one. Without a backward pass it frees the layer's scratch from
// mark and returns x as the next spare.
func (ps *datumPass) mlpBlock(li int, mark arenaMark, x, spare [][]float32) (next, nextSpare [][]float32) {
	c, ar, n := ps.c, ps.ar, ps.n
	lw, a := &ps.t.model.w.layers[li], &ps.acts[li]
	a.xn2 = ar.rowsToFill(n, c.Hidden)
	next = spare
	if ps.backward {
		next = ps.residual(li)
	}
	eachRow(n, c.Hidden, func(p int) {
		rmsNorm(a.xn2[p], a.x2[p], lw.mlpNorm, c.RMSNormEps)
		copy(next[p], a.x2[p])
	})
	if lw.moe != nil {
		ps.moeForward(li, next)
	}
	if c.mlpWidth(li) > 0 {
		ps.mlpForward(li, next)
	}
	if !ps.backward {
		ar.release(mark)
		ps.acts[li] = layerActs{}
		return next, x
	}
	return next, nil
}

// mlpForward adds layer li's dense MLP output (of xn2) to next, which
// holds the residual.
func (ps *datumPass) mlpForward(li int, next [][]float32) {
	c, ar, n := ps.c, ps.ar, ps.n
	lw, tl, a := &ps.t.model.w.layers[li], &ps.t.layers[li], &ps.acts[li]
	w := c.mlpWidth(li)
	a.g, a.u, a.h = ar.rowsToFill(n, w), ar.rowsToFill(n, w), ar.rowsToFill(n, w)
	a.t[tGate], a.t[tUp], a.t[tDown] = ps.tRows(tl.gate), ps.tRows(tl.up), ps.tRows(tl.down)
	in := packIn(lw.gate, a.xn2) // gate and up read it packed once
	in.linear(lw.gate, nil, tl.gate, a.xn2, a.g, a.t[tGate], false)
	in.linear(lw.up, nil, tl.up, a.xn2, a.u, a.t[tUp], false)
	in.release()
	eachRow(n, w, func(p int) { siluMul(a.h[p], a.g[p], a.u[p]) })
	trainLinear(lw.down, nil, tl.down, a.h, next, a.t[tDown], true)
}

// head runs the output layer over the pass's rows x (one datum's, or a
// run of a group's datums that fits one chunk: headRuns) a chunk of
// positions at a time: logits, logprobs and each datum's loss into outs
// and losses (indexed by the segments' d), and with a backward pass the
// gradient back to the final norm's output, into dxnF (nil: it takes
// them), which it returns.
func (ps *datumPass) head(l Loss, ds []Datum, x [][]float32, outs []DatumOutput, losses []float64, dxnF [][]float32) [][]float32 {
	t, c, ar, n := ps.t, ps.c, ps.ar, ps.n
	w := t.model.w
	xnF := ar.rows(n, c.Hidden)
	eachRow(n, c.Hidden, func(p int) { rmsNorm(xnF[p], x[p], w.norm, c.RMSNormEps) })
	tHead := ps.tRows(t.head)
	if ps.backward && dxnF == nil {
		dxnF = ar.rowsToFill(n, c.Hidden)
	}
	scs := make([]*rowScorer, len(ps.segs))
	for i, sg := range ps.segs {
		scs[i], losses[sg.d] = newRowScorer(l, &ds[sg.d], &outs[sg.d]), 0
	}
	mark := ar.mark() // the logits and the chunks' scratch: freed at the end
	chunk := headChunkRows(n, c.VocabSize)
	logits := ar.rowsToFill(chunk, c.VocabSize)
	for p0 := 0; p0 < n; p0 += chunk {
		p1 := min(p0+chunk, n)
		lg := logits[:p1-p0]
		var th [][]float32
		if tHead != nil {
			th = tHead[p0:p1]
		}
		trainLinear(w.lmHead, nil, t.head, xnF[p0:p1], lg, th, false)
		ps.scoreChunk(scs, lg, p0, losses)
		if ps.backward {
			ps.linearBackward(w.lmHead, t.head, xnF[p0:p1], th, lg, dxnF[p0:p1], false)
		}
	}
	ar.release(mark)
	return dxnF
}

// scoreChunk scores the logits rows lg of positions p0 on, each datum's
// rows with its own scorer (scs, one a segment), and adds each position's
// loss to its datum's in position order, as one loop over the datum would.
func (ps *datumPass) scoreChunk(scs []*rowScorer, lg [][]float32, p0 int, losses []float64) {
	p1 := p0 + len(lg)
	for i, sg := range ps.segs {
		lo, hi := max(p0, sg.off), min(p1, sg.off+sg.n)
		if lo >= hi {
			continue
		}
		for _, loss := range scs[i].scoreRows(lg[lo-p0:hi-p0], lo-sg.off, ps.backward) {
			losses[sg.d] += loss
		}
	}
}

// backwardLayer propagates dx (the gradient at layer li's output residual)
// to its input residual in place, accumulating the layer's LoRA gradients.
// It reports false when nothing below needs the gradient.
func (ps *datumPass) backwardLayer(li, lowest int, dx [][]float32) bool {
	t, c, ar, n := ps.t, ps.c, ps.ar, ps.n
	h, qd, kvd := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	lw, tl, a := &t.model.w.layers[li], &t.layers[li], &ps.acts[li]
	if lw.mla != nil {
		return ps.mlaBackwardLayer(li, lowest, dx)
	}
	mark := ar.mark() // this layer's gradient scratch is dead once dx is updated
	ps.mlpBlockBackward(li, dx)
	if li == lowest && !t.cfg.TrainAttn {
		return false // nothing trained below
	}
	ar.release(mark)
	mark = ar.mark()
	// Attention: x2 = x + o(attention(q, k, v)).
	datt := ar.rowsToFill(n, qd)
	ps.linearBackward(lw.o, tl.o, a.att, a.t[tO], dx, datt, false)
	dq, dk, dv := ar.rows(n, qd), ar.rows(n, kvd), ar.rows(n, kvd)
	for _, sg := range ps.segs { // each datum attends to its own positions
		o, e := sg.off, sg.off+sg.n
		attentionBackward(c, li, lw.sinks, a.q[o:e], sg.cache.k[li][:sg.n*kvd], sg.cache.v[li][:sg.n*kvd], datt[o:e], dq[o:e], dk[o:e], dv[o:e])
	}
	eachRow(n, qd+kvd, func(p int) {
		ropeBackward(dq[p], c.HeadDim, ps.cos[p], ps.sin[p])
		ropeBackward(dk[p], c.HeadDim, ps.cos[p], ps.sin[p])
	})
	if lw.qNorm != nil {
		dq, dk = headNormBackward(ar, dq, a.qRaw, lw.qNorm, c), headNormBackward(ar, dk, a.kRaw, lw.kNorm, c)
	}
	var dxn1 [][]float32
	if li > lowest {
		dxn1 = ar.rowsToFill(n, h)
	}
	ps.linearsBackward([]sharedLinear{{lw.q, tl.q, a.t[tQ], dq}, {lw.k, tl.k, a.t[tK], dk}, {lw.v, tl.v, a.t[tV], dv}}, a.xn1, dxn1)
	if dxn1 != nil {
		eachRow(n, h, func(p int) { rmsNormBackward(dx[p], dxn1[p], a.x[p], lw.attnNorm, c.RMSNormEps) })
	}
	ar.release(mark)
	return true
}

// mlpBlockBackward adds to dx, the gradient of layer li's output
// residual, what flows back through its MLPs and their norm.
func (ps *datumPass) mlpBlockBackward(li int, dx [][]float32) {
	c, n := ps.c, ps.n
	lw, a := &ps.t.model.w.layers[li], &ps.acts[li]
	var dxn [][]float32
	if lw.moe != nil {
		dxn = ps.moeBackward(li, dx)
	}
	if c.mlpWidth(li) > 0 {
		d := ps.mlpBackward(li, dx)
		if dxn == nil {
			dxn = d
		} else {
			eachRow(n, c.Hidden, func(p int) { putRow(dxn[p], d[p], true) })
		}
	}
	eachRow(n, c.Hidden, func(p int) { rmsNormBackward(dx[p], dxn[p], a.x2[p], lw.mlpNorm, c.RMSNormEps) })
}

// mlpBackward returns the gradient of layer li's MLP input xn2 given dx,
// that of its output: x3 = x2 + down(silu(gate(xn2))·up(xn2)).
func (ps *datumPass) mlpBackward(li int, dx [][]float32) [][]float32 {
	t, c, ar, n := ps.t, ps.c, ps.ar, ps.n
	lw, tl, a := &t.model.w.layers[li], &t.layers[li], &ps.acts[li]
	dg := ar.rowsToFill(n, c.mlpWidth(li))
	ps.linearBackward(lw.down, tl.down, a.h, a.t[tDown], dx, dg, false)
	du := ar.rowsToFill(n, c.mlpWidth(li))
	eachRow(n, c.mlpWidth(li), func(p int) { siluMulBackward(dg[p], du[p], a.g[p], a.u[p]) })
	dxn := ar.rowsToFill(n, c.Hidden)
	ps.linearsBackward([]sharedLinear{{lw.gate, tl.gate, a.t[tGate], dg}, {lw.up, tl.up, a.t[tUp], du}}, a.xn2, dxn)
	return dxn
}

// trainLinear is Model.linear keeping the LoRA intermediate A·x in ts.
func trainLinear(w mat, bias []float32, mod *trainModule, xs, ys, ts [][]float32, accumulate bool) {
	in := packIn(w, xs)
	defer in.release()
	in.linear(w, bias, mod, xs, ys, ts, accumulate)
}

// linear is trainLinear on xs packed in (the batch of every product
// that reads it: a LoRA's A and W, and q, k and v or gate and up).
func (in packedIn) linear(w mat, bias []float32, mod *trainModule, xs, ys, ts [][]float32, accumulate bool) {
	if mod != nil && bias == nil { // B·t added while W·x is in cache, same bits
		in.mul(mod.pair.a, xs, ts, false)
		in.fold(w, xs, ys, mod.pair.b, ts, accumulate)
		return
	}
	in.mul(w, xs, ys, accumulate)
	if bias != nil {
		for _, y := range ys[:len(xs)] {
			for j, b := range bias {
				y[j] += b
			}
		}
	}
	if mod != nil {
		in.mul(mod.pair.a, xs, ts, false)
		matMul(mod.pair.b, ts, ys, true)
	}
}

// linearBackward takes the gradients dys of a linear layer's outputs: it
// adds the LoRA matrices' gradients to their local gradients and, unless
// dxs is nil, writes (or adds) the gradient of the inputs to dxs. ts are
// the forward's A·x.
func (ps *datumPass) linearBackward(w mat, mod *trainModule, xs, ts, dys, dxs [][]float32, accumulate bool) {
	if mod == nil {
		if dxs != nil {
			matMulT(w, dys, dxs, accumulate)
		}
		return
	}
	dts := ps.ar.rowsToFill(len(dys), ps.t.cfg.Rank)
	matMulT(mod.pair.b, dys, dts, false)
	ps.weightGrads(mod, xs, ts, dys, dts)
	if dxs != nil {
		matMulTLoRA(w, dys, mod.pair.a, dts, dxs, accumulate)
	}
}

// sharedLinear is one of the layers linearsBackward takes: its weight
// and LoRA module, the forward's A·x and the gradient of its outputs.
type sharedLinear struct {
	w       mat
	mod     *trainModule
	ts, dys [][]float32
}

// linearsBackward is linearBackward of each of ls in turn on the same
// inputs xs (q, k and v; gate and up), the first writing dxs and the
// others adding to it. With a LoRA on each, their A gradients are one
// outerAccShared, which packs each strip of xs once for all of them
// instead of once per layer; every element's sum, and the order of the
// additions to dxs, are linearBackward's, so the bits are the same.
func (ps *datumPass) linearsBackward(ls []sharedLinear, xs, dxs [][]float32) {
	for _, l := range ls {
		if l.mod == nil || l.mod.a.rows != ls[0].mod.a.rows {
			for i, l := range ls {
				ps.linearBackward(l.w, l.mod, xs, l.ts, l.dys, dxs, i > 0)
			}
			return
		}
	}
	dts := make([][][]float32, len(ls))
	for i, l := range ls {
		dts[i] = ps.ar.rowsToFill(len(l.dys), ps.t.cfg.Rank)
		matMulT(l.mod.pair.b, l.dys, dts[i], false)
	}
	ps.weightGradsShared(ls, xs, dts)
	if dxs != nil {
		for i, l := range ls {
			matMulTLoRA(l.w, l.dys, l.mod.pair.a, dts[i], dxs, i > 0)
		}
	}
}

// headNormBackward returns the gradient of Qwen3's per-head RMSNorm inputs
// (raw) given the gradient of its outputs.
func headNormBackward(ar *arena, dOut, raw [][]float32, weight []float32, c Config) [][]float32 {
	d := ar.rows(len(dOut), len(dOut[0]))
	eachRow(len(dOut), len(dOut[0]), func(p int) {
		for o := 0; o < len(dOut[p]); o += c.HeadDim {
			e := o + c.HeadDim
			rmsNormBackward(d[p][o:e], dOut[p][o:e], raw[p][o:e], weight, c.RMSNormEps)
		}
	})
	return d
}

// eachRow runs fn(p) for every row p < n, the rows split over the cores
// (forward and backward norms, rotary, SwiGLU: on one core they were a
// few percent of a step while the other cores waited). A row stays whole
// on one core, so its bits do not depend on the split; width is a row's
// elements, which decides whether other cores are worth waking.
func eachRow(n, width int, fn func(p int)) {
	parallelFor(n, 1, n*width*elemWork, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			fn(p)
		}
	})
}

// elemWork is an element's cost in parallelFor's multiply-adds, roughly.
const elemWork = 4

// attnBackScratches keeps attentionBackward's scratch from call to call:
// allocated afresh for each, its buffers were three quarters of the bytes
// a tiny model's training step allocated (14 MB per 8 × 128 step of
// tiny-llama), each one cleared on allocation and later collected.
var attnBackScratches = sync.Pool{New: func() any { return new(pooledBackScratch) }}

// pooledBackScratch is a pooled scratch with the attention shape it
// served: the scratch keeps views shaped for it (packHead's rows of
// HeadDim), so another shape starts from a fresh one.
type pooledBackScratch struct {
	s                  attnBackScratch
	hd, heads, kvHeads int
}

// backScratch takes a scratch for c's attention from the pool.
func backScratch(c Config) *pooledBackScratch {
	p := attnBackScratches.Get().(*pooledBackScratch)
	if p.hd != c.HeadDim || p.heads != c.Heads || p.kvHeads != c.KVHeads {
		*p = pooledBackScratch{hd: c.HeadDim, heads: c.Heads, kvHeads: c.KVHeads}
	}
	return p
}

// attentionBackward computes the gradients of causal grouped-query
// attention's q, k and v (after rotary) from the output gradient datt,
// recomputing the attention probabilities instead of keeping them; k and v
// are the n cached rows, one slab of KVHeads·HeadDim columns. KV heads are
// split across goroutines when they divide among the cores, otherwise
// each block's positions and keys are (blockSplit); each head takes
// backRows(n) positions at a time (attnBack.block), reading each cached row
// once per block, and keys and values accumulate in ascending query
// position and head order. Layer li
// and its sink logits (nil: none) give GPT-OSS's window and sinks.
func attentionBackward(c Config, li int, sinks []float32, q [][]float32, k, v []float32, datt, dq, dk, dv [][]float32) {
	n := len(q)
	rows := backRows(n)
	a := &attnBack{c: c, li: li, sinks: sinks, q: q, datt: datt, dq: dq, dk: dk, dv: dv, k: k, v: v}
	workers := min(runtime.GOMAXPROCS(0), max(1, n*n*c.Heads*c.HeadDim/parallelMinWork))
	if c.KVHeads%workers != 0 { // a split by heads would leave cores idle
		p := backScratch(c)
		defer attnBackScratches.Put(p)
		s := &p.s
		s.split = growTo(s.split, workers)
		ps := s.split
		for kvh := range c.KVHeads {
			s.packHead(a, kvh)
			for p0 := 0; p0 < n; p0 += rows {
				a.blockSplit(s, ps, kvh, p0, min(rows, n-p0), workers)
			}
			s.unpackHead(a, kvh)
		}
		return
	}
	forkJoin(workers, func(wk int) {
		p := backScratch(c)
		defer attnBackScratches.Put(p)
		s := &p.s
		for kvh := wk; kvh < c.KVHeads; kvh += workers {
			s.packHead(a, kvh)
			for p0 := 0; p0 < n; p0 += rows {
				a.block(s, kvh, p0, min(rows, n-p0))
			}
			s.unpackHead(a, kvh)
		}
	})
}

// headNorms sets out to x with each hd-wide head RMS-normalised (Qwen3's
// q/k norms).
func headNorms(out, x, weight []float32, hd int, eps float64) {
	for o := 0; o < len(x); o += hd {
		rmsNorm(out[o:o+hd], x[o:o+hd], weight, eps)
	}
}
