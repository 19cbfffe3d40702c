package engine

// Attention products of the forward pass: one query against many cached
// key/value rows per call, so the per-call cost of a head of 16-128
// elements is paid once per head rather than once per position. The cache
// is a flat slab: position t's head starts at t*stride+off. Each kernel
// keeps the order of the per-position dot1/axpy calls it replaces, so the
// vector paths (kernels_attn_simd.go) give the same bits as these loops.
// attentionBackward uses the blocked kernels below (kernels_attn_bwd.go).

// attnDots writes dst[t] = dot1(rows[t*stride+off:][:len(q)], q) for every
// t < len(dst): one query's raw scores against len(dst) cached rows.
func attnDots(dst, q, rows []float32, stride, off int) {
	hd := len(q)
	for t := attnDotsVec(dst, q, rows, stride, off); t < len(dst); t++ {
		o := t*stride + off
		dst[t] = dot1(rows[o:o+hd], q)
	}
}

// attnDotsPair is attnDots for two queries against the same rows (two
// query heads sharing a KV head), reading each row once for both.
func attnDotsPair(d0, d1, q0, q1, rows []float32, stride, off int) {
	t := attnDotsPairVec(d0, d1, q0, q1, rows, stride, off)
	attnDots(d0[t:], q0, rows, stride, off+t*stride)
	attnDots(d1[t:], q1, rows, stride, off+t*stride)
}

// attnWeighted adds Σ_t p[t]·rows[t*stride+off:][:len(out)] to out, each
// element summed in ascending t (as successive axpy calls would). The
// vector path does the leading multiple of 8 elements, this loop the rest.
func attnWeighted(out, p, rows []float32, stride, off int) {
	i0 := attnWeightedVec(out, p, rows, stride, off)
	weightedScalar(out[i0:], p, rows, stride, off+i0)
}

// weightedScalar is attnWeighted's loop: y[i] += p[t]·row t's element i,
// in ascending t.
func weightedScalar(y, p, rows []float32, stride, off int) {
	if len(y) == 0 {
		return
	}
	for t, a := range p {
		o := t*stride + off
		x := rows[o : o+len(y)]
		for i := range y {
			y[i] += float32(a * x[i])
		}
	}
}

// The blocked kernels below serve a block of queries at consecutive
// positions of one sequence (prefill chunks, training sequences): qs[j] is
// the query of position p0+j/group (group query heads per position, in
// head order), and row j of the score slab sc starts at j*ld. Each kernel
// reads a cached row once for every query of the block that sees it, and
// keeps the per-query kernels' order, so a block gives attendRow's bits.

// dotsTile is how many keys dotsBlock16 scores at once (four pairs).
const dotsTile = 8

// attnDotsBlock writes sc[j*ld+t] = dot1(keys[t*stride+off:][:hd], qs[j])
// for every query j and key t ≤ its position. The vector path may also
// write entries past a query's position (within its row); they are not
// scores and the caller ignores them.
func attnDotsBlock(sc []float32, ld int, qs [][]float32, group, p0 int, keys []float32, stride, off int) {
	attnDotsBlockPairs(sc, ld, qs, group, p0, keys, stride, off, nil)
}

// attnDotsBlockPairs is attnDotsBlock given pairs, when not nil, the keys
// already in the 512-bit kernel's layout (packKeyPairs), from key 0.
func attnDotsBlockPairs(sc []float32, ld int, qs [][]float32, group, p0 int, keys []float32, stride, off int, pairs []float32) {
	t0 := attnDotsBlockVec(sc, ld, qs, group, p0, keys, stride, off, pairs)
	hd := len(qs[0])
	for j, q := range qs {
		s := sc[j*ld:]
		for t := t0; t <= p0+j/group; t++ {
			o := t*stride + off
			s[t] = dot1(keys[o:o+hd], q)
		}
	}
}

// attnWeightedBlock adds Σ_{t ≤ position of j} sc[j*ld+t]·rows[t*stride+off:]
// to outs[j] for every query j, each element summed in ascending t as
// attnWeighted sums it.
func attnWeightedBlock(outs [][]float32, sc []float32, ld, group, p0 int, rows []float32, stride, off int) {
	i0 := attnWeightedBlockVec(outs, sc, ld, group, p0, rows, stride, off)
	for j, out := range outs {
		weightedScalar(out[i0:], sc[j*ld:j*ld+p0+j/group+1], rows, stride, off+i0)
	}
}
