package engine

// Multi-head latent attention (DeepSeek-V3). Queries come from q_proj, or
// through a low-rank bottleneck q_b_proj(RMSNorm(q_a_proj(x))); keys and
// values from kv_a_proj_with_mqa(x), whose first kv_lora_rank outputs
// are normalised and expanded by kv_b_proj into each head's key part
// without rotary (qk_nope_head_dim) and its value (v_head_dim), and whose
// last qk_rope_head_dim outputs are one rotary key part shared by every
// head. A head's query and key are [nope | rope]; rotary applies to the
// rope part only, in DeepSeek's interleaved layout (neighbouring elements
// pair). The softmax scale is 1/√(nope+rope) times mscale² under YaRN.
//
// Sampling caches the latent per position, kv_a_layernorm's output and
// the rotated key part, and attends in the absorbed form (mla_latent.go).
// Training runs the ordinary attention kernels on expanded heads: a head
// is HeadDim = nope+rope wide, KVHeads = Heads, and each value is padded
// with zeros to HeadDim (as transformers pads for flash attention), which
// reuses the blocked forward and backward (mla_train.go). Both fold the
// extra score factor into the queries.
// LoRA adapts q_a_proj (or q_proj), kv_a_proj_with_mqa and o_proj, in the
// modQ, modK and modO slots.

// mlaWeights are one layer's latent attention projections (o_proj stays
// in layerWeights.o).
type mlaWeights struct {
	qIn     mat       // q_a_proj [q_lora_rank, hidden], or q_proj [heads·qk, hidden]
	qANorm  []float32 // q_a_layernorm (nil without q_lora_rank)
	qB      mat       // q_b_proj [heads·qk, q_lora_rank] (rows 0 without q_lora_rank)
	kvA     mat       // kv_a_proj_with_mqa [kv_lora_rank + rope, hidden]
	kvANorm []float32 // kv_a_layernorm
	kvB     mat       // kv_b_proj [heads·(nope + v), kv_lora_rank]
}

// deepseekShapes adds layer i's tensors (prefix p, norms already there).
func deepseekShapes(c Config, i int, p string, s map[string][]int) {
	m, h := c.MLA, c.Hidden
	a := p + "self_attn."
	if m.QLoraRank > 0 {
		s[a+"q_a_proj.weight"], s[a+"q_a_layernorm.weight"] = []int{m.QLoraRank, h}, []int{m.QLoraRank}
		s[a+"q_b_proj.weight"] = []int{c.Heads * c.HeadDim, m.QLoraRank}
	} else {
		s[a+"q_proj.weight"] = []int{c.Heads * c.HeadDim, h}
	}
	s[a+"kv_a_proj_with_mqa.weight"] = []int{m.KVLoraRank + m.QKRopeDim, h}
	s[a+"kv_a_layernorm.weight"] = []int{m.KVLoraRank}
	s[a+"kv_b_proj.weight"] = []int{c.Heads * (m.QKNopeDim + m.VHeadDim), m.KVLoraRank}
	s[a+"o_proj.weight"] = []int{h, c.Heads * m.VHeadDim}
	mlp := p + "mlp."
	if c.IsMoELayer(i) {
		moeShapes(c, p, s)
		s[mlp+"gate.e_score_correction_bias"] = []int{c.Experts}
		mlp += "shared_experts."
	}
	if w := c.mlpWidth(i); w > 0 {
		s[mlp+"gate_proj.weight"], s[mlp+"up_proj.weight"] = []int{w, h}, []int{w, h}
		s[mlp+"down_proj.weight"] = []int{h, w}
	}
}

// buildDeepSeekLayer arranges layer i's tensors (prefix p).
func buildDeepSeekLayer(c Config, i int, p string, l *layerWeights,
	get func(string, ...int) ([]float32, error), getMat func(string, int, int) (mat, error)) error {
	m, h := c.MLA, c.Hidden
	mw := &mlaWeights{}
	l.mla = mw
	a, mlp := p+"self_attn.", p+"mlp."
	vec := func(dst *[]float32, name string, n int) func() error {
		return func() (err error) { *dst, err = get(name, n); return }
	}
	mx := func(dst *mat, name string, rows, cols int) func() error {
		return func() (err error) { *dst, err = getMat(name, rows, cols); return }
	}
	steps := []func() error{vec(&l.attnNorm, p+"input_layernorm.weight", h), vec(&l.mlpNorm, p+"post_attention_layernorm.weight", h),
		mx(&mw.kvA, a+"kv_a_proj_with_mqa.weight", m.KVLoraRank+m.QKRopeDim, h), vec(&mw.kvANorm, a+"kv_a_layernorm.weight", m.KVLoraRank),
		mx(&mw.kvB, a+"kv_b_proj.weight", c.Heads*(m.QKNopeDim+m.VHeadDim), m.KVLoraRank),
		mx(&l.o, a+"o_proj.weight", h, c.Heads*m.VHeadDim)}
	if m.QLoraRank > 0 {
		steps = append(steps, mx(&mw.qIn, a+"q_a_proj.weight", m.QLoraRank, h), vec(&mw.qANorm, a+"q_a_layernorm.weight", m.QLoraRank),
			mx(&mw.qB, a+"q_b_proj.weight", c.Heads*c.HeadDim, m.QLoraRank))
	} else {
		steps = append(steps, mx(&mw.qIn, a+"q_proj.weight", c.Heads*c.HeadDim, h))
	}
	if c.IsMoELayer(i) {
		bias := mlp + "gate.e_score_correction_bias"
		steps = append(steps, func() (err error) {
			l.moe, err = buildMoE(c, p, getMat, func(n string, d int) ([]float32, error) { return get(n, d) })
			return
		}, func() error { return vec(&l.moe.scoreBias, bias, c.Experts)() })
		mlp += "shared_experts."
	}
	if w := c.mlpWidth(i); w > 0 {
		steps = append(steps, mx(&l.gate, mlp+"gate_proj.weight", w, h), mx(&l.up, mlp+"up_proj.weight", w, h),
			mx(&l.down, mlp+"down_proj.weight", h, w))
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// mlaScratch is the sampling forward's room for latent attention
// (mla_latent.go).
type mlaScratch struct {
	qa, kva, qlat, lat, attv [][]float32
	hin, hout                [][]float32 // one head's views of a product's rows
	blk                      []latentBlock
}

// mlaLayer runs DeepSeek layer li over the rows (the residual in ws.x),
// with the latent cache and absorbed attention (mla_latent.go).
func (m *Model) mlaLayer(ws *workspace, rows []row, li int) {
	c, lw := m.cfg, &m.w.layers[li]
	n, xn := len(rows), ws.xn[:len(rows)]
	for i := range rows {
		rmsNorm(xn[i], ws.x[i], lw.attnNorm, c.RMSNormEps)
	}
	m.mlaProject(ws, rows, li)
	m.absorbQueries(ws, n, li)
	m.latentAttention(ws, rows, li)
	m.expandValues(ws, n, li)
	m.linear(ws, lw.o, nil, ws.loras, li, modO, ws.mla.attv, ws.x, true)
	for i := range rows {
		rmsNorm(xn[i], ws.x[i], lw.mlpNorm, c.RMSNormEps)
	}
	if lw.moe != nil {
		m.moeMLP(ws, li, xn, ws.x)
	}
	if w := c.mlpWidth(li); w > 0 {
		g, u := widthOf(ws.g, n, w), widthOf(ws.u, n, w)
		m.linear(ws, lw.gate, nil, ws.loras, li, modGate, xn, g, false)
		m.linear(ws, lw.up, nil, ws.loras, li, modUp, xn, u, false)
		for i := range g {
			siluMul(g[i], g[i], u[i])
		}
		m.linear(ws, lw.down, nil, ws.loras, li, modDown, g, ws.x, true)
	}
}

// widthOf returns views of the first n rows cut to width w (at most
// their capacity), leaving the rows themselves as they are.
func widthOf(rows [][]float32, n, w int) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		out[i] = rows[i][:w]
	}
	return out
}

// mlaProject computes the rows' queries (ws.q, rotated and scaled) and
// writes their latents into the caches, from the normalised rows ws.xn:
// kv_a_layernorm's output, then the rotated key part.
func (m *Model) mlaProject(ws *workspace, rows []row, li int) {
	c, ml, mw, s := m.cfg, m.cfg.MLA, m.w.layers[li].mla, &ws.mla
	n, xn := len(rows), ws.xn[:len(rows)]
	if mw.qB.rows > 0 {
		s.qa = grow(s.qa, n, ml.QLoraRank)
		m.linear(ws, mw.qIn, nil, ws.loras, li, modQ, xn, s.qa, false)
		for i := range n {
			rmsNorm(s.qa[i], s.qa[i], mw.qANorm, c.RMSNormEps)
		}
		matMul(mw.qB, s.qa, ws.q[:n], false)
	} else {
		m.linear(ws, mw.qIn, nil, ws.loras, li, modQ, xn, ws.q, false)
	}
	kvr, kw := ml.KVLoraRank, ml.KVLoraRank+ml.QKRopeDim
	s.kva = grow(s.kva, n, kw)
	m.linear(ws, mw.kvA, nil, ws.loras, li, modK, xn, s.kva, false)
	scale := float32(c.mlaScoreScale())
	for i, r := range rows {
		lat := r.seq.k[li][r.pos*kw : (r.pos+1)*kw]
		rmsNorm(lat[:kvr], s.kva[i][:kvr], mw.kvANorm, c.RMSNormEps)
		copy(lat[kvr:], s.kva[i][kvr:])
		c.mlaRope(ws.q[i], lat[kvr:], ws.cos[i], ws.sin[i], scale)
	}
}

// mlaRope applies rotary to the rope part of every query head and to the
// shared key part kpe, in place, and multiplies the query by scale.
func (c Config) mlaRope(q, kpe, cos, sin []float32, scale float32) {
	nope, hd := c.MLA.QKNopeDim, c.HeadDim
	for h := 0; h < len(q); h += hd {
		c.ropePart(q[h+nope:h+hd], cos, sin, false)
	}
	c.ropePart(kpe, cos, sin, false)
	if scale != 1 {
		scaleScores(q, scale)
	}
}

// mlaRopeBackward is mlaRope's transpose for the gradients: dq's rope
// parts and dkpe rotated back, dq multiplied by scale.
func (c Config) mlaRopeBackward(dq, dkpe, cos, sin []float32, scale float32) {
	if scale != 1 {
		scaleScores(dq, scale)
	}
	nope, hd := c.MLA.QKNopeDim, c.HeadDim
	for h := 0; h < len(dq); h += hd {
		c.ropePart(dq[h+nope:h+hd], cos, sin, true)
	}
	c.ropePart(dkpe, cos, sin, true)
}

// ropePart rotates one head's rope part x: neighbouring pairs (x[2i],
// x[2i+1]) by angle i when the config interleaves (DeepSeek's layout;
// transformers de-interleaves q and k alike before rotate_half, which
// gives the same scores), else x[i] with x[i+d/2]. inverse rotates back.
func (c Config) ropePart(x, cos, sin []float32, inverse bool) {
	half := len(x) / 2
	if !c.Routing.RopeInterleave {
		ropeRotate(x[:half], x[half:], cos[:half], sin[:half], inverse)
		return
	}
	for i := range half {
		co, si := cos[i], sin[i]
		if inverse {
			si = -si
		}
		a, b := x[2*i], x[2*i+1]
		x[2*i], x[2*i+1] = float32(a*co)-float32(b*si), float32(b*co)+float32(a*si)
	}
}

// mlaKeysValues writes one position's keys (each head's nope part from
// kv_b_proj's output kvb, then the shared rotary part kpe) and values
// (each head's value from kvb, padded with zeros to HeadDim).
func (c Config) mlaKeysValues(kvb, kpe, k, v []float32) {
	nope, vd, hd := c.MLA.QKNopeDim, c.MLA.VHeadDim, c.HeadDim
	for h := range c.Heads {
		src := kvb[h*(nope+vd) : (h+1)*(nope+vd)]
		copy(k[h*hd:h*hd+nope], src[:nope])
		copy(k[h*hd+nope:(h+1)*hd], kpe)
		copy(v[h*hd:h*hd+vd], src[nope:])
		clear(v[h*hd+vd : (h+1)*hd])
	}
}

// mlaKeysValuesBackward adds the gradients of a position's padded keys
// and values (dk, dv) to those of kvb and kpe.
func (c Config) mlaKeysValuesBackward(dk, dv, dkvb, dkpe []float32) {
	nope, vd, hd := c.MLA.QKNopeDim, c.MLA.VHeadDim, c.HeadDim
	for h := range c.Heads {
		dst := dkvb[h*(nope+vd) : (h+1)*(nope+vd)]
		putRow(dst[:nope], dk[h*hd:h*hd+nope], true)
		putRow(dkpe, dk[h*hd+nope:(h+1)*hd], true)
		putRow(dst[nope:], dv[h*hd:h*hd+vd], true)
	}
}

// mlaValues copies each head's value part of a padded attention output
// row att into attv (heads·v_head_dim).
func (c Config) mlaValues(att, attv []float32) {
	vd, hd := c.MLA.VHeadDim, c.HeadDim
	for h := range c.Heads {
		copy(attv[h*vd:(h+1)*vd], att[h*hd:h*hd+vd])
	}
}

// mlaValuesBackward spreads the gradient of attv back over the padded row.
func (c Config) mlaValuesBackward(dattv, datt []float32) {
	vd, hd := c.MLA.VHeadDim, c.HeadDim
	for h := range c.Heads {
		copy(datt[h*hd:h*hd+vd], dattv[h*vd:(h+1)*vd])
	}
}
