package engine

import "math"

// Blocked attention backward. A block is attnRows consecutive positions of
// the sequence and every query head of one KV head's group: its queries
// are numbered j = (position−p0)·group + head, the order in which the
// per-position loop visited them. The block reads each cached key and
// value row once for all its queries (the forward's blocked kernels, plus
// attnScatterBlock for the key and value gradients) and keeps that loop's
// bits: scores in attnDot's order, the forward's softmax numerators
// (expScores32), the rest of the softmax and Σ p·dp per query in float64
// (eight lanes: expScores32, dot64Lanes), each dq element summed in ascending key order and
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
	split        [][]float64 // blockSplit's p, per worker
	kh, vh       []float32   // the KV head's keys and values, contiguous
	khp, vhp     []float32   // the same in dotsBlock16's layout when tiled
	tiled        bool
	dkh, dvh     [][]float32 // the KV head's key and value gradients, rows of one slab
	dslab        []float32
}

// packHead copies KV head kvh's keys and values into s.kh and s.vh, one
// row of HeadDim after another, once for all the head's blocks: the block
// kernels then read them in place instead of packing every tile of the
// cache (whose rows lie KVHeads·HeadDim apart) again for every block. The
// head's key and value gradients are packed the same way (s.dkh, s.dvh):
// every block adds to every key's, and rows 4 KiB apart (the 0.6B shape)
// each began a new page, missed the L1 and defeated the prefetcher.
func (s *attnBackScratch) packHead(a *attnBack, kvh int) {
	hd, kvd := a.c.HeadDim, a.c.KVHeads*a.c.HeadDim
	n := len(a.k) / kvd
	kh, vh := grow32(&s.kh, n*hd), grow32(&s.vh, n*hd)
	d := grow32(&s.dslab, 2*n*hd)
	if len(s.dkh) != n || len(s.dkh) > 0 && &s.dkh[0][0] != &d[0] {
		s.dkh, s.dvh = rowsOf(d[:n*hd], n, hd), rowsOf(d[n*hd:], n, hd)
	}
	for t := range n {
		o := t*kvd + kvh*hd
		copy(kh[t*hd:(t+1)*hd], a.k[o:o+hd])
		copy(vh[t*hd:(t+1)*hd], a.v[o:o+hd])
		copy(s.dkh[t], a.dk[t][kvh*hd:])
		copy(s.dvh[t], a.dv[t][kvh*hd:])
	}
	// Scores and datt·v of every block read the same keys and values:
	// packed in transposed tiles once here, not per block (a quarter of
	// those products' time).
	if s.tiled = keyTilesOK(hd); s.tiled {
		packKeyTiles(grow32(&s.khp, n*hd), kh, n, hd)
		packKeyTiles(grow32(&s.vhp, n*hd), vh, n, hd)
	}
}

// unpackHead copies KV head kvh's key and value gradients back.
func (s *attnBackScratch) unpackHead(a *attnBack, kvh int) {
	hd := a.c.HeadDim
	for t := range s.dkh {
		copy(a.dk[t][kvh*hd:(kvh+1)*hd], s.dkh[t])
		copy(a.dv[t][kvh*hd:(kvh+1)*hd], s.dvh[t])
	}
}

// block adds the gradients of KV head kvh's queries at positions
// p0..p0+nb-1 to dq, and their contributions to dk and dv; s holds the
// head's keys and values (packHead). In a sliding-window layer the block
// starts at the window of its first position (key lo); a later query's
// keys before its own window get zero weights, which leave every sum's
// bits as they are.
func (a *attnBack) block(s *attnBackScratch, kvh, p0, nb int) {
	g := a.prep(s, kvh, p0, nb)
	a.queries(s, &g, 0, nb, &s.p)
	a.keys(s, &g, 0, g.ld)
}

// blockSplit is block with its work split over workers: the block's
// positions for the scores, softmax and dq, then its keys for dk and dv.
// Every output element is one worker's, summed in block's order, so the
// bits do not depend on the split (for a model with fewer KV heads than
// cores, whose head split would leave cores idle).
func (a *attnBack) blockSplit(s *attnBackScratch, ps [][]float64, kvh, p0, nb, workers int) {
	g := a.prep(s, kvh, p0, nb)
	forkJoin(workers, func(wk int) {
		lo, hi := splitWork(nb, workers, wk, func(i int) int { return g.rel + i + 1 })
		a.queries(s, &g, lo, hi, &ps[wk])
	})
	forkJoin(workers, func(wk int) {
		lo, hi := splitWork(g.ld, workers, wk, func(t int) int { return g.nb - max(0, t-g.rel) })
		a.keys(s, &g, lo, hi)
	})
}

// blockGeom is one block's layout: keys from lo, its first position rel
// keys after lo, ld = rel+nb keys in all, nq queries.
// ls is the row stride of its score buffers (sc, dp): ld padded
// (scoreStride).
type blockGeom struct{ kvh, p0, nb, lo, rel, ld, ls, nq int }

// scoreStride is the row stride for rows of ld scores: a multiple of 16
// floats plus 16, so successive rows start 64 bytes further along the
// L1's sets. The key gradients' tiles read a column of them (one float
// per query row, scatterColumns); at 512 or 2048 keys the rows were 2 or
// 8 KiB apart, all in one or two sets of eight-to-twelve ways, and each
// of a tile's 64 rows came from L2 again for every tile of keys.
func scoreStride(ld int) int { return (ld+15)&^15 + 16 }

// prep packs a block's heads and sizes its buffers.
func (a *attnBack) prep(s *attnBackScratch, kvh, p0, nb int) blockGeom {
	group := a.c.Heads / a.c.KVHeads
	lo := a.c.firstKey(a.li, p0)
	g := blockGeom{kvh: kvh, p0: p0, nb: nb, lo: lo, rel: p0 - lo, ld: p0 - lo + nb, nq: nb * group}
	g.ls = scoreStride(g.ld)
	s.pack(a, kvh, p0, nb)
	s.sc, s.dp = grow32(&s.sc, g.nq*g.ls), grow32(&s.dp, g.nq*g.ls)
	if !scatterColumnsOK(a.c.HeadDim) { // else keys read sc and dp in place
		s.sT, s.pT = grow32(&s.sT, g.ld*g.nq), grow32(&s.pT, g.ld*g.nq)
	}
	return g
}

// queries does the block's positions i0..i1-1 (relative to its first):
// their scores and output-gradient products, softmax gradients (kept
// transposed for keys) and dq. p is the caller's float64 row buffer.
func (a *attnBack) queries(s *attnBackScratch, g *blockGeom, i0, i1 int, p *[]float64) {
	if i0 >= i1 {
		return
	}
	hd, group := a.c.HeadDim, a.c.Heads/a.c.KVHeads
	j0, j1, ld, nq := i0*group, i1*group, g.ls, g.nq // ld: the rows' stride
	*p = growTo(*p, ld)
	kh, vh := s.kh[g.lo*hd:], s.vh[g.lo*hd:]
	sc, dp := s.sc, s.dp
	var khp, vhp []float32
	if g.lo%dotsTile == 0 && s.tiled { // tiles start at key lo
		khp, vhp = s.khp[g.lo*hd:], s.vhp[g.lo*hd:]
	}
	attnDotsBlockTiles(sc[j0*ld:j1*ld], ld, s.qs[j0:j1], group, g.rel+i0, kh, hd, 0, khp)
	attnDotsBlockTiles(dp[j0*ld:j1*ld], ld, s.dos[j0:j1], group, g.rel+i0, vh, hd, 0, vhp)
	scale := float32(1 / math.Sqrt(float64(hd))) // the forward's
	for j := j0; j < j1; j++ {
		first, m := a.c.firstKey(a.li, g.p0+j/group)-g.lo, g.rel+j/group+1 // keys query j sees
		sink := float32(math.Inf(-1))
		if a.sinks != nil {
			sink = a.sinks[g.kvh*group+j%group]
		}
		row, prow := sc[j*ld:j*ld+m], dp[j*ld:j*ld+m]
		softmaxGrad((*p)[first:m], row[first:], prow[first:], scale, sink)
		clear(row[:first])
		clear(prow[:first])
	}
	// The keys' share reads ds and p per key: in place where the register
	// tiles run (scatterColumns), else transposed here (sT, pT) a tile at
	// a time, not an element per query as each row was done, whose stores
	// nq floats apart took a cache line each (9% of a 0.6B step).
	if !scatterColumnsOK(hd) {
		keys := g.rel + (j1-1)/group + 1 // those the block's last query sees
		transposeTo(s.sT, nq, sc, ld, j0, j1, keys)
		transposeTo(s.pT, nq, dp, ld, j0, j1, keys)
	}
	attnWeightedBlock(s.dqs[j0:j1], sc[j0*ld:j1*ld], ld, group, g.rel+i0, kh, hd, 0)
	for j := j0; j < j1; j++ {
		copy(a.dq[g.p0+j/group][(g.kvh*group+j%group)*hd:], s.dqs[j])
	}
}

// transposeTo sets dst[t*ldd+j] = src[j*lds+t] for rows j0 ≤ j < j1 and
// columns t < cols, in square tiles whose rows span a cache line on both
// sides.
func transposeTo(dst []float32, ldd int, src []float32, lds, j0, j1, cols int) {
	const tile = 16
	for t0 := 0; t0 < cols; t0 += tile {
		t1 := min(t0+tile, cols)
		for jt := j0; jt < j1; jt += tile {
			je := min(jt+tile, j1)
			for t := t0; t < t1; t++ {
				d := dst[t*ldd+jt : t*ldd+je]
				for i := range d {
					d[i] = src[(jt+i)*lds+t]
				}
			}
		}
	}
}

// keys adds the block's terms of dk and dv for keys lo+t0..lo+t1-1.
func (a *attnBack) keys(s *attnBackScratch, g *blockGeom, t0, t1 int) {
	if t0 >= t1 {
		return
	}
	hd, group, nq := a.c.HeadDim, a.c.Heads/a.c.KVHeads, g.nq
	dk, dv := s.dkh[g.lo+t0:g.lo+t1], s.dvh[g.lo+t0:g.lo+t1]
	qs, dos := s.heads[:nq*hd], s.heads[nq*hd:2*nq*hd]
	if scatterColumnsOK(hd) { // queries left ds and p untransposed
		scatterColumns(dk, s.sc[t0:], g.ls, qs, nq, group, g.rel-t0)
		scatterColumns(dv, s.dp[t0:], g.ls, dos, nq, group, g.rel-t0)
		return
	}
	attnScatterBlock(dk, 0, s.sT[t0*nq:t1*nq], qs, nq, group, g.rel-t0)
	attnScatterBlock(dv, 0, s.pT[t0*nq:t1*nq], dos, nq, group, g.rel-t0)
}

// splitWork returns part's share lo..hi-1 of 0..n-1 when item i costs
// work(i) ≥ 0: contiguous shares of about equal work, in order.
func splitWork(n, parts, part int, work func(i int) int) (lo, hi int) {
	total := 0
	for i := range n {
		total += work(i)
	}
	lo, hi, acc := n, n, 0
	for i := range n {
		if lo == n && acc*parts >= total*part {
			lo = i
		}
		if part < parts-1 && acc*parts >= total*(part+1) {
			hi = i
			break
		}
		acc += work(i)
	}
	return min(lo, hi), hi
}

// softmaxGrad turns one query's raw scores sc into the softmax's input
// gradients ds (in place) given dp, the output gradient's dot products
// with the values; p receives the probabilities, and dp (spent) their
// float32 roundings, which dv's products read. sink is GPT-OSS's sink
// logit, which joins the denominator only (−Inf: none). The numerators
// are the forward's (expScores32: scale, maximum and exp32 in float32,
// as softmaxRows), the rest float64; the two sums over keys run in eight
// lanes and a fixed tree (the sink's term last): a single ascending sum
// waited on each add, and the two were as slow as the block's score
// products. The elementwise steps have vector paths (IEEE operations,
// same bits).
func softmaxGrad(p []float64, sc, dp []float32, scale, sink float32) {
	if softmaxGrad8(p, sc, dp, scale, sink) {
		return
	}
	p = p[:len(sc)]
	mx := max(sink, maxScaled32(sc, scale))
	sum := expScores32(p, sc, scale, mx) + sinkTerm(sink, mx)
	r := 1 / sum
	for t := mul64Vec(p, r); t < len(p); t++ {
		p[t] *= r
	}
	dsum := dot64Lanes(p, dp)
	t := dsVec(sc, p, dp, dsum, float64(scale))
	for i := range t {
		dp[i] = float32(p[i])
	}
	dsTail(sc[t:len(p)], dp[t:len(p)], p[t:], dsum, float64(scale))
}

// sinkTerm is the sink's numerator in the softmax's denominator, as the
// forward takes it (0 without a sink).
func sinkTerm(sink, mx float32) float64 {
	if math.IsInf(float64(sink), -1) {
		return 0
	}
	return float64(exp32(sink - mx))
}

// dsTail is softmaxGrad's last step for the elements the vector loops
// leave: ds into sc, then the float32 probability into dp.
func dsTail(sc, dp []float32, p []float64, dsum, scale float64) {
	for t := range p {
		sc[t] = float32(float64(p[t]*(float64(dp[t])-dsum)) * scale)
		dp[t] = float32(p[t])
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
// successive axpyFMA calls would: the key and value gradients' share of a
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

// dot64Lanes is Σ p[t]·dp[t] in sumLanes' lanes and tree, each product
// rounded to float64 before its add.
func dot64Lanes(p []float64, dp []float32) float64 {
	dp = dp[:len(p)]
	var s [8]float64
	t := dot64LanesVec(p, dp, &s)
	for ; t+8 <= len(p); t += 8 {
		for l := range s {
			s[l] += float64(p[t+l] * float64(dp[t+l]))
		}
	}
	for ; t < len(p); t++ {
		s[0] += float64(p[t] * float64(dp[t]))
	}
	return sum8(&s)
}
