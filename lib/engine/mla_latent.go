package engine

import (
	"cmp"
	"math"
	"runtime"
	"slices"
)

// Latent attention in sampling: the cache keeps, per layer and position,
// the latent of DeepSeek's MLA, kv_lora_rank + qk_rope_head_dim floats
// shared by every head (the kv_a_layernorm output, then the rotated key
// part), rather than each head's expanded key and value; at DeepSeek
// V3.1's shape that is 576 floats against 2·128·192, 85 times fewer.
// Attention runs in the absorbed form. kv_b_proj's rows for head h split
// into W_uk (qk_nope_head_dim × kv_lora_rank) and W_uv (v_head_dim ×
// kv_lora_rank); since k_nope = W_uk·c,
//
//	q_nope·k_nope = (W_ukᵀ·q_nope)·c and Σ_t p_t·W_uv·c_t = W_uv·(Σ_t p_t·c_t),
//
// so each head's query becomes [W_ukᵀ·q_nope | q_rope] (kv_lora_rank +
// rope wide), is scored against the cached rows as one shared key head
// (multi-query attention), its probabilities weight the cached latents,
// and W_uv turns that sum into the head's value. The products read
// kv_b_proj in place (row ranges of it, no copy): the service adapts
// kv_a_proj_with_mqa, whose LoRA is in the latent before the cache, and
// never kv_b_proj (mlaLoRASlot refuses it), so there is no adapted
// W_uk/W_uv to absorb per adapter.
//
// The attention uses the blocked kernels for every row (a decoding row is
// a block of one position): all heads of a block chunk read each cached
// row once, and a query's score and sum have the same bits whatever block
// it is in (kernels_attn.go), so a sequence gets the same bits alone or
// batched, in any prefill chunking, on any thread count. Training keeps
// the expanded form (mla_train.go): its backward is the ordinary one.

// cacheWidths are the floats per position and layer that the sampling
// cache keeps of keys and of values.
func (c Config) cacheWidths() (kw, vw int) {
	if m := c.MLA; m != nil {
		return m.KVLoraRank + m.QKRopeDim, 0
	}
	kvd := c.KVHeads * c.HeadDim
	return kvd, kvd
}

// KVBytesPerPosition is the memory the sampling KV cache takes per
// position of a sequence: every layer's keys and values in float32 (for
// latent attention the latent alone).
func (c Config) KVBytesPerPosition() int64 {
	kw, vw := c.cacheWidths()
	return 4 * int64(c.Layers) * int64(kw+vw)
}

// rowRange is rows [lo, hi) of w, sharing its memory (without the bf16
// path's packed copy, which kv_b_proj never has).
func (w mat) rowRange(lo, hi int) mat {
	v := mat{rows: hi - lo, cols: w.cols}
	if w.bf != nil {
		v.bf = w.bf[lo*w.cols : hi*w.cols]
	} else {
		v.data = w.data[lo*w.cols : hi*w.cols]
	}
	return v
}

// latentHeads is how many heads one attention unit takes: their queries
// share each cached row while it is in L1, and a model with many heads
// still splits a decoding row over the cores.
const latentHeads = 16

// headRows points in[i] at head h's part [lo, hi) of rows[i], and returns
// them (in reused as the backing array).
func headRows(in, rows [][]float32, lo, hi int) [][]float32 {
	in = in[:0]
	for _, r := range rows {
		in = append(in, r[lo:hi])
	}
	return in
}

// absorbQueries turns the rows' rotated queries (ws.q, per head [nope |
// rope]) into latent queries ws.mla.qlat, per head [W_ukᵀ·q_nope | rope].
func (m *Model) absorbQueries(ws *workspace, n, li int) {
	c, ml, s := m.cfg, m.cfg.MLA, &ws.mla
	kvr, nope, vd, hd := ml.KVLoraRank, ml.QKNopeDim, ml.VHeadDim, c.HeadDim
	qw := kvr + ml.QKRopeDim
	s.qlat = grow(s.qlat, n, c.Heads*qw)
	kvB := m.w.layers[li].mla.kvB
	for h := range c.Heads {
		uk := kvB.rowRange(h*(nope+vd), h*(nope+vd)+nope)
		s.hin = headRows(s.hin, ws.q[:n], h*hd, h*hd+nope)
		s.hout = headRows(s.hout, s.qlat, h*qw, h*qw+kvr)
		matMulT(uk, s.hin, s.hout, false)
		for i := range n {
			copy(s.qlat[i][h*qw+kvr:(h+1)*qw], ws.q[i][h*hd+nope:(h+1)*hd])
		}
	}
}

// expandValues turns each head's weighted latent (ws.mla.lat) into its
// value, W_uv·lat, in ws.mla.attv (heads·v_head_dim).
func (m *Model) expandValues(ws *workspace, n, li int) {
	c, ml, s := m.cfg, m.cfg.MLA, &ws.mla
	kvr, nope, vd := ml.KVLoraRank, ml.QKNopeDim, ml.VHeadDim
	s.attv = grow(s.attv, n, c.Heads*vd)
	kvB := m.w.layers[li].mla.kvB
	for h := range c.Heads {
		uv := kvB.rowRange(h*(nope+vd)+nope, (h+1)*(nope+vd))
		s.hin = headRows(s.hin, s.lat, h*kvr, (h+1)*kvr)
		s.hout = headRows(s.hout, s.attv, h*vd, (h+1)*vd)
		matMul(uv, s.hin, s.hout, false)
	}
}

// latentAttention computes ws.mla.lat, each row's probability-weighted
// sum of the cached latents per head, from the latent queries.
func (m *Model) latentAttention(ws *workspace, rows []row, li int) {
	c, s := m.cfg, &ws.mla
	s.lat = grow(s.lat, len(rows), c.Heads*c.MLA.KVLoraRank)
	units, work := m.latentUnits(ws, rows)
	workers := min(runtime.GOMAXPROCS(0), len(units), max(1, work/parallelMinWork))
	ws.scores = growTo(ws.scores, workers)
	s.blk = growTo(s.blk, workers)
	forkJoinUnits(workers, len(units), func(u, wk int) { m.attendLatent(ws, rows, units[u], li, wk) })
}

// latentUnits splits rows into attention units: runs of consecutive
// positions of one sequence, attnRows at most, times chunks of
// latentHeads heads (attnUnit.kvh is the chunk's first head), largest
// first.
func (m *Model) latentUnits(ws *workspace, rows []row) ([]attnUnit, int) {
	c := m.cfg
	w := 2*c.MLA.KVLoraRank + c.MLA.QKRopeDim
	units, total := ws.attnUnits[:0], 0
	for i := 0; i < len(rows); {
		n := runAt(rows, i)
		for b := 0; b < n; b += attnRows {
			nb, p := min(attnRows, n-b), rows[i+b].pos
			for h := 0; h < c.Heads; h += latentHeads {
				wk := nb * (p + nb) * (min(h+latentHeads, c.Heads) - h) * w
				units, total = append(units, attnUnit{i: i + b, n: nb, kvh: h, work: wk}), total+wk
			}
		}
		i += n
	}
	slices.SortStableFunc(units, func(a, b attnUnit) int { return cmp.Compare(b.work, a.work) })
	ws.attnUnits = units
	return units, total
}

// latentBlock is an attention worker's views of a unit's queries and
// outputs, in block order (position, then head).
type latentBlock struct{ qs, outs [][]float32 }

// attendLatent computes unit u: the scores of its heads' latent queries
// at its positions against the cached rows they see, their softmax, and
// the weighted sums of the rows' latent parts.
func (m *Model) attendLatent(ws *workspace, rows []row, u attnUnit, li, worker int) {
	c, ml, s := m.cfg, m.cfg.MLA, &ws.mla
	kvr, qw := ml.KVLoraRank, ml.KVLoraRank+ml.QKRopeDim
	h0, g := u.kvh, min(u.kvh+latentHeads, c.Heads)-u.kvh
	p0 := rows[u.i].pos
	ld, nq := p0+u.n, u.n*g
	if cap(ws.scores[worker]) < nq*ld {
		ws.scores[worker] = make([]float32, nq*ld*3/2)
	}
	sc := ws.scores[worker][:nq*ld]
	b := &s.blk[worker]
	b.qs, b.outs = b.qs[:0], b.outs[:0]
	for j := range nq {
		r, h := u.i+j/g, h0+j%g
		o := s.lat[r][h*kvr : (h+1)*kvr]
		clear(o)
		b.qs, b.outs = append(b.qs, s.qlat[r][h*qw:(h+1)*qw]), append(b.outs, o)
	}
	cache := rows[u.i].seq.k[li]
	attnDotsBlock(sc, ld, b.qs, g, p0, cache, qw, 0)
	scale := float32(1 / math.Sqrt(float64(c.HeadDim)))
	for j := range nq {
		p := sc[j*ld : j*ld+p0+j/g+1]
		scaleScores(p, scale)
		softmaxSink(p, nil, 0)
	}
	attnWeightedBlock(b.outs, sc, ld, g, p0, cache, qw, 0)
}
