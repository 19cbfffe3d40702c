package engine

import "math"

// Blocked attention backward. A block is attnRows consecutive positions of
// the sequence and every query head of one KV head's group: its queries
// are numbered j = (position−p0)·group + head, the order in which the
// per-position loop visited them. The block reads each cached key and
// value row once for all its queries (the forward's blocked kernels, plus
// attnScatterBlock for the key and value gradients) and keeps that loop's
// bits: scores in dot1's order, softmax and Σ p·dp per query in float64 in
// ascending key order, each dq element summed in ascending key order and
// each dk/dv element in ascending query order (blocks in ascending
// position), every term a float32 product then a float32 add.

// attnBack holds attentionBackward's operands; k and v are flat slabs of
// KVHeads·HeadDim columns; li is the layer (for GPT-OSS's sliding window)
// and sinks its sink logits, nil when it has none.
type attnBack struct {
	c                   Config
	li                  int
	sinks               []float32
	q, datt, dq, dk, dv [][]float32
	k, v                []float32
}

// attnBackScratch is one worker's buffers, reused across its blocks.
type attnBackScratch struct {
	heads        []float32   // the block's q, datt and dq heads, each set contiguous
	qs, dos, dqs [][]float32 // views of heads per query
	sc, dp       []float32   // per query (row stride ld): scores, then ds; datt·v
	sT, pT       []float32   // per key (row stride nq): ds; probabilities
	p            []float64   // one query's probabilities
	kh, vh       []float32   // the KV head's keys and values, contiguous
}

// packHead copies KV head kvh's keys and values into s.kh and s.vh, one
// row of HeadDim after another, once for all the head's blocks: the block
// kernels then read them in place instead of packing every tile of the
// cache (whose rows lie KVHeads·HeadDim apart) again for every block.
func (s *attnBackScratch) packHead(a *attnBack, kvh int) {
	hd, kvd := a.c.HeadDim, a.c.KVHeads*a.c.HeadDim
	n := len(a.k) / kvd
	kh, vh := grow32(&s.kh, n*hd), grow32(&s.vh, n*hd)
	for t := range n {
		o := t*kvd + kvh*hd
		copy(kh[t*hd:(t+1)*hd], a.k[o:o+hd])
		copy(vh[t*hd:(t+1)*hd], a.v[o:o+hd])
	}
}

// block adds the gradients of KV head kvh's queries at positions
// p0..p0+nb-1 to dq, and their contributions to dk and dv; s holds the
// head's keys and values (packHead). In a sliding-window layer the block
// starts at the window of its first position (key lo); a later query's
// keys before its own window get zero weights, which leave every sum's
// bits as they are.
func (a *attnBack) block(s *attnBackScratch, kvh, p0, nb int) {
	hd, group := a.c.HeadDim, a.c.Heads/a.c.KVHeads
	ko, lo := kvh*hd, a.c.firstKey(a.li, p0)
	rel := p0 - lo // the block's first position, counted from key lo
	ld, nq := rel+nb, nb*group
	s.pack(a, kvh, p0, nb)
	sc, dp := grow32(&s.sc, nq*ld), grow32(&s.dp, nq*ld)
	sT, pT := grow32(&s.sT, ld*nq), grow32(&s.pT, ld*nq)
	s.p = growTo(s.p, ld)
	kh, vh := s.kh[lo*hd:], s.vh[lo*hd:]
	attnDotsBlock(sc, ld, s.qs, group, rel, kh, hd, 0)
	attnDotsBlock(dp, ld, s.dos, group, rel, vh, hd, 0)
	scale := 1 / math.Sqrt(float64(hd))
	for j := range nq {
		first, m := a.c.firstKey(a.li, p0+j/group)-lo, rel+j/group+1 // keys query j sees
		sink := math.Inf(-1)
		if a.sinks != nil {
			sink = float64(a.sinks[kvh*group+j%group])
		}
		softmaxGrad(s.p[first:m], sc[j*ld+first:j*ld+m], dp[j*ld+first:j*ld+m], scale, sink)
		clear(sc[j*ld : j*ld+first])
		for t := range first {
			sT[t*nq+j], pT[t*nq+j] = 0, 0
		}
		for t := first; t < m; t++ {
			sT[t*nq+j], pT[t*nq+j] = sc[j*ld+t], float32(s.p[t])
		}
	}
	attnWeightedBlock(s.dqs, sc, ld, group, rel, kh, hd, 0)
	for j, d := range s.dqs {
		copy(a.dq[p0+j/group][(kvh*group+j%group)*hd:], d)
	}
	attnScatterBlock(a.dk[lo:p0+nb], ko, sT, s.heads[:nq*hd], nq, group, rel)
	attnScatterBlock(a.dv[lo:p0+nb], ko, pT, s.heads[nq*hd:2*nq*hd], nq, group, rel)
}

// softmaxGrad turns one query's raw scores sc into the softmax's input
// gradients ds (in place) given dp, the output gradient's dot products
// with the values; p receives the probabilities. sink is GPT-OSS's sink
// logit, which joins the denominator only (−Inf: none). Float64
// throughout, sums in ascending key order (the sink's term last), as the
// per-position loop computed them; the elementwise steps have vector
// paths (IEEE operations, same bits).
func softmaxGrad(p []float64, sc, dp []float32, scale, sink float64) {
	for t := scores64Vec(p, sc, scale); t < len(sc); t++ {
		p[t] = float64(sc[t]) * scale
	}
	mx := sink
	for _, v := range p {
		mx = max(mx, v)
	}
	expShift64(p, mx)
	var sum, dsum float64
	for _, e := range p {
		sum += e
	}
	if !math.IsInf(sink, -1) {
		sum += exp64(sink - mx)
	}
	for t := div64Vec(p, sum); t < len(p); t++ {
		p[t] /= sum
	}
	for t, e := range p {
		dsum += float64(e * float64(dp[t]))
	}
	for t := dsVec(sc, p, dp, dsum, scale); t < len(p); t++ {
		sc[t] = float32(float64(p[t]*(float64(dp[t])-dsum)) * scale)
	}
}

// pack copies the block's query and output-gradient heads and the current
// query gradients into the scratch, in block order.
func (s *attnBackScratch) pack(a *attnBack, kvh, p0, nb int) {
	hd, group := a.c.HeadDim, a.c.Heads/a.c.KVHeads
	nq := nb * group
	heads := grow32(&s.heads, 3*nq*hd)
	s.qs, s.dos, s.dqs = s.qs[:0], s.dos[:0], s.dqs[:0]
	for j := range nq {
		p, o := p0+j/group, (kvh*group+j%group)*hd
		q, do, dq := heads[j*hd:(j+1)*hd], heads[(nq+j)*hd:(nq+j+1)*hd], heads[(2*nq+j)*hd:(2*nq+j+1)*hd]
		copy(q, a.q[p][o:])
		copy(do, a.datt[p][o:])
		copy(dq, a.dq[p][o:])
		s.qs, s.dos, s.dqs = append(s.qs, q), append(s.dos, do), append(s.dqs, dq)
	}
}

// grow32 returns (*buf)[:n], reallocating when it is shorter.
func grow32(buf *[]float32, n int) []float32 {
	if cap(*buf) < n {
		*buf = make([]float32, n*5/4)
	}
	return (*buf)[:n]
}

// firstSeer is the first query of a block at positions p0.. (group
// queries per position) whose position is at least key t's.
func firstSeer(t, group, p0 int) int {
	return max(0, t-p0) * group
}

// attnScatterBlock adds Σ_j w[t*nq+j]·rows[j*hd:][:hd] over the block's
// queries j that see key t (j ≥ firstSeer) to outs[t][off:off+hd], for
// every key t < len(outs), each element summed in ascending j as
// successive axpy calls would: the key and value gradients' share of a
// block, with rows the block's packed heads (hd = len(rows)/nq).
func attnScatterBlock(outs [][]float32, off int, w, rows []float32, nq, group, p0 int) {
	hd := len(rows) / nq
	i0 := attnScatterBlockVec(outs, off, w, rows, nq, group, p0)
	if i0 == hd {
		return
	}
	for t, out := range outs {
		j0 := firstSeer(t, group, p0)
		weightedScalar(out[off+i0:off+hd], w[t*nq+j0:(t+1)*nq], rows, hd, j0*hd+i0)
	}
}
