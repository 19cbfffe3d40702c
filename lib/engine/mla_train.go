package engine

// Training through DeepSeek layers: latent attention's forward keeps what
// its backward needs (the bottleneck outputs before their norms, for the
// norms' gradients), and the backward runs the ordinary attention
// backward on the padded heads, then back through rotary, the key/value
// expansion, the latent norms and the projections. kv_b_proj and q_b_proj
// are frozen (the service adapts neither), so only their inputs get
// gradients. The MLP is the routed experts and, beside them, the shared
// experts in the dense slots (or the dense MLP of the first layers).

// mlaActs are a latent attention layer's kept activations beyond layerActs'.
type mlaActs struct {
	qa   [][]float32 // q_a_proj's output before q_a_layernorm (nil without q_lora_rank)
	kva  [][]float32 // kv_a_proj_with_mqa's output (the rotary key part before rotary)
	ckv  [][]float32 // kv_a_layernorm's output
	attv [][]float32 // the attention output without the value padding
}

// mlaForwardLayer is forwardLayer for a DeepSeek layer.
func (ps *datumPass) mlaForwardLayer(li int, x, spare [][]float32) (next, nextSpare [][]float32) {
	m, c, ar, n := ps.t.model, ps.c, ps.ar, ps.n
	lw, tl, a := &m.w.layers[li], &ps.t.layers[li], &ps.acts[li]
	mark := ar.mark()
	a.x = x
	a.xn1 = ar.rowsToFill(n, c.Hidden)
	for p := range n {
		rmsNorm(a.xn1[p], x[p], lw.attnNorm, c.RMSNormEps)
	}
	ps.mlaProjectTrain(li)
	a.att = ar.rows(n, c.Heads*c.HeadDim)
	ps.ws.q, ps.ws.att = a.q, a.att
	m.attention(ps.ws, ps.rowsAt, li)
	a.mla.attv = ar.rowsToFill(n, c.Heads*c.MLA.VHeadDim)
	a.x2 = ar.rowsToFill(n, c.Hidden)
	for p := range n {
		c.mlaValues(a.att[p], a.mla.attv[p])
		copy(a.x2[p], x[p])
	}
	a.t[tO] = ps.tRows(tl.o)
	trainLinear(lw.o, nil, tl.o, a.mla.attv, a.x2, a.t[tO], true)
	return ps.mlpBlock(li, mark, x, spare)
}

// mlaProjectTrain computes layer li's queries (a.q, after rotary and the
// score factor) and its keys and values (into the cache) from a.xn1.
func (ps *datumPass) mlaProjectTrain(li int) {
	m, c, ar, n := ps.t.model, ps.c, ps.ar, ps.n
	ml, mw, tl, a := c.MLA, m.w.layers[li].mla, &ps.t.layers[li], &ps.acts[li]
	kvd := c.KVHeads * c.HeadDim
	ma := &mlaActs{}
	a.mla = ma
	a.q = ar.rowsToFill(n, c.Heads*c.HeadDim)
	a.t[tQ], a.t[tK] = ps.tRows(tl.q), ps.tRows(tl.k)
	if mw.qB.rows > 0 {
		ma.qa = ar.rowsToFill(n, ml.QLoraRank)
		qan := ar.rowsToFill(n, ml.QLoraRank)
		trainLinear(mw.qIn, nil, tl.q, a.xn1, ma.qa, a.t[tQ], false)
		for p := range n {
			rmsNorm(qan[p], ma.qa[p], mw.qANorm, c.RMSNormEps)
		}
		matMul(mw.qB, qan, a.q, false)
	} else {
		trainLinear(mw.qIn, nil, tl.q, a.xn1, a.q, a.t[tQ], false)
	}
	ma.kva = ar.rowsToFill(n, ml.KVLoraRank+ml.QKRopeDim)
	trainLinear(mw.kvA, nil, tl.k, a.xn1, ma.kva, a.t[tK], false)
	ma.ckv = ar.rowsToFill(n, ml.KVLoraRank)
	for p := range n {
		rmsNorm(ma.ckv[p], ma.kva[p][:ml.KVLoraRank], mw.kvANorm, c.RMSNormEps)
	}
	kvb := ar.rowsToFill(n, c.Heads*(ml.QKNopeDim+ml.VHeadDim))
	matMul(mw.kvB, ma.ckv, kvb, false)
	ps.cache.k[li], ps.cache.v[li] = ar.takeToFill(n*kvd), ar.takeToFill(n*kvd)
	k, v := ar.view(ps.cache.k[li], n, kvd), ar.view(ps.cache.v[li], n, kvd)
	kpe := ar.rowsToFill(n, ml.QKRopeDim)
	scale := float32(c.mlaScoreScale())
	for p := range n {
		copy(kpe[p], ma.kva[p][ml.KVLoraRank:])
		c.mlaRope(a.q[p], kpe[p], ps.cos[p], ps.sin[p], scale)
		c.mlaKeysValues(kvb[p], kpe[p], k[p], v[p])
	}
}

// mlaBackwardLayer is backwardLayer for a DeepSeek layer.
func (ps *datumPass) mlaBackwardLayer(li, lowest int, dx [][]float32) bool {
	t, c, ar, n := ps.t, ps.c, ps.ar, ps.n
	lw, tl, a := &t.model.w.layers[li], &t.layers[li], &ps.acts[li]
	mark := ar.mark()
	ps.mlpBlockBackward(li, dx)
	if li == lowest && !t.cfg.TrainAttn {
		return false // nothing trained below
	}
	ar.release(mark)
	mark = ar.mark()
	dattv, datt := ar.rows(n, c.Heads*c.MLA.VHeadDim), ar.rows(n, c.Heads*c.HeadDim)
	ps.linearBackward(lw.o, tl.o, a.mla.attv, a.t[tO], dx, dattv, false)
	for p := range n {
		c.mlaValuesBackward(dattv[p], datt[p])
	}
	kvd := c.KVHeads * c.HeadDim
	dq, dk, dv := ar.rows(n, c.Heads*c.HeadDim), ar.rows(n, kvd), ar.rows(n, kvd)
	attentionBackward(c, li, nil, a.q, ps.cache.k[li][:n*kvd], ps.cache.v[li][:n*kvd], datt, dq, dk, dv)
	var dxn1 [][]float32
	if li > lowest {
		dxn1 = ar.rows(n, c.Hidden)
	}
	ps.mlaProjectBackward(li, dq, dk, dv, dxn1)
	if dxn1 != nil {
		for p := range n {
			rmsNormBackward(dx[p], dxn1[p], a.x[p], lw.attnNorm, c.RMSNormEps)
		}
	}
	ar.release(mark)
	return true
}

// mlaProjectBackward takes the gradients of layer li's rotated, scaled
// queries and padded keys and values, accumulates the adapters' gradients
// and, unless dxn1 is nil, writes the gradient of the normalised input.
func (ps *datumPass) mlaProjectBackward(li int, dq, dk, dv, dxn1 [][]float32) {
	t, c, ar, n := ps.t, ps.c, ps.ar, ps.n
	ml, mw, tl, a := c.MLA, t.model.w.layers[li].mla, &t.layers[li], &ps.acts[li]
	dkvb, dkva := ar.rows(n, c.Heads*(ml.QKNopeDim+ml.VHeadDim)), ar.rows(n, ml.KVLoraRank+ml.QKRopeDim)
	scale := float32(c.mlaScoreScale())
	for p := range n {
		dkpe := dkva[p][ml.KVLoraRank:]
		c.mlaKeysValuesBackward(dk[p], dv[p], dkvb[p], dkpe)
		c.mlaRopeBackward(dq[p], dkpe, ps.cos[p], ps.sin[p], scale)
	}
	dckv := ar.rows(n, ml.KVLoraRank)
	matMulT(mw.kvB, dkvb, dckv, false)
	for p := range n {
		rmsNormBackward(dkva[p][:ml.KVLoraRank], dckv[p], a.mla.kva[p][:ml.KVLoraRank], mw.kvANorm, c.RMSNormEps)
	}
	dqIn := dq
	if mw.qB.rows > 0 {
		dqan := ar.rows(n, ml.QLoraRank)
		matMulT(mw.qB, dq, dqan, false)
		dqIn = ar.rows(n, ml.QLoraRank)
		for p := range n {
			rmsNormBackward(dqIn[p], dqan[p], a.mla.qa[p], mw.qANorm, c.RMSNormEps)
		}
	}
	ps.linearsBackward([]sharedLinear{{mw.qIn, tl.q, a.t[tQ], dqIn}, {mw.kvA, tl.k, a.t[tK], dkva}}, a.xn1, dxn1)
}

// mlaShared are the floats per position that latent attention takes both
// kept (forward) and as gradients (backward): query and output heads,
// padded keys and values, the bottlenecks (q twice, kv_a's output, the
// normalised latent), kv_b_proj's output and the shared rotary key part,
// the value-only output, and the adapters' A·x (rank r, attn 1 if trained).
func mlaShared(c Config, r, attn int) int {
	m := c.MLA
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	q := 0
	if m.QLoraRank > 0 {
		q = 2 * m.QLoraRank
	}
	return 2*qd + 2*kvd + q + 2*m.KVLoraRank + m.QKRopeDim + c.Heads*(m.QKNopeDim+m.VHeadDim) + c.Heads*m.VHeadDim + attn*3*r
}

// mlaKeptFloats is layerSizes.base for a DeepSeek layer: mlaShared plus
// the kept rotary key part and the residual's four rows (x2, the norms,
// the next residual).
func mlaKeptFloats(c Config, r, attn int) int {
	return mlaShared(c, r, attn) + c.MLA.QKRopeDim + 4*c.Hidden
}

// mlaGradFloats is a DeepSeek layer's attention backward scratch per
// position, without the input norm's gradient.
func mlaGradFloats(c Config, r, attn int) int { return mlaShared(c, r, attn) }
