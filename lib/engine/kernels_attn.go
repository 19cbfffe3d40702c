package engine

import "unsafe"

// Attention products of the forward pass: one query against many cached
// key/value rows per call, so the per-call cost of a head of 16-128
// elements is paid once per head rather than once per position. The cache
// is a flat slab: position t's head starts at t*stride+off. Every term is
// one fused multiply-add (fma32, MulAdd in the vector kernels): a score in
// attnDot's eight lanes and tree, a weighted sum's element in ascending
// key order (axpyFMA's per-position order), so the vector paths
// (kernels_attn_simd.go, kernels_attn_block_simd.go, kernels_attn_avx512.go)
// give the same bits as these loops whatever the batch or thread count.
// attentionBackward uses the blocked kernels below (kernels_attn_bwd.go).

// attnDot is one attention score k·q: eight lane sums, lane l adding
// k[i]·q[i] for i ≡ l (mod 8) in ascending i with one fused multiply-add
// each (the tail past a multiple of 8 goes to lane 0), then the tree
// ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)). Eight lanes, not dotLanes' 16: an
// AVX2 register holds them, and the 512-bit kernels hold two keys' lanes
// per register.
func attnDot(k, q []float32) float32 {
	n := len(q)
	k = k[:n]
	var s [8]float32
	i := 0
	for ; i+8 <= n; i += 8 {
		kk, qq := k[i:i+8:i+8], q[i:i+8:i+8]
		for l := range s {
			s[l] = fma32(kk[l], qq[l], s[l])
		}
	}
	for ; i < n; i++ {
		s[0] = fma32(k[i], q[i], s[0])
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}

// attnDots writes dst[t] = attnDot(rows[t*stride+off:][:len(q)], q) for
// every t < len(dst): one query's raw scores against len(dst) cached rows.
func attnDots(dst, q, rows []float32, stride, off int) {
	hd := len(q)
	for t := attnDotsVec(dst, q, rows, stride, off); t < len(dst); t++ {
		o := t*stride + off
		dst[t] = attnDot(rows[o:o+hd], q)
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
// element summed in ascending t (as successive axpyFMA calls would). The
// vector path does the leading multiple of 8 elements, this loop the rest.
func attnWeighted(out, p, rows []float32, stride, off int) {
	i0 := attnWeightedVec(out, p, rows, stride, off)
	weightedScalar(out[i0:], p, rows, stride, off+i0)
}

// weightedScalar is attnWeighted's loop: y[i] = fma(p[t], row t's element
// i, y[i]), in ascending t.
func weightedScalar(y, p, rows []float32, stride, off int) {
	if len(y) == 0 {
		return
	}
	for t, a := range p {
		o := t*stride + off
		x := rows[o : o+len(y)]
		for i := range y {
			y[i] = fma32(a, x[i], y[i])
		}
	}
}

// The blocked kernels below serve a block of queries at consecutive
// positions of one sequence (prefill chunks, training sequences): qs[j] is
// the query of position p0+j/group (group query heads per position, in
// head order), and row j of the score slab sc starts at j*ld. Each kernel
// reads a cached row once for every query of the block that sees it, and
// keeps the per-query kernels' order, so a block gives attendRow's bits.

// dotsTile is how many keys dotsBlock16 scores at once: a 512-bit
// vector's lanes.
const dotsTile = 16

// attnDotsBlock writes sc[j*ld+t] = attnDot(keys[t*stride+off:][:hd], qs[j])
// for every query j and key t ≤ its position. The vector path may also
// write entries past a query's position (within its row); they are not
// scores and the caller ignores them.
func attnDotsBlock(sc []float32, ld int, qs [][]float32, group, p0 int, keys []float32, stride, off int) {
	attnDotsBlockTiles(sc, ld, qs, group, p0, keys, stride, off, nil)
}

// attnDotsBlockTiles is attnDotsBlock given tiles, when not nil, the keys
// already in the 512-bit kernel's layout (packKeyTiles), from key 0.
func attnDotsBlockTiles(sc []float32, ld int, qs [][]float32, group, p0 int, keys []float32, stride, off int, tiles []float32) {
	t0 := attnDotsBlockVec(sc, ld, qs, group, p0, keys, stride, off, tiles)
	hd := len(qs[0])
	for j, q := range qs {
		s := sc[j*ld:]
		for t := t0; t <= p0+j/group; t++ {
			o := t*stride + off
			s[t] = attnDot(keys[o:o+hd], q)
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

// softmaxRows replaces each row of a block's raw scores by its softmax
// after scaling (scaleScores, then softmaxSink with head h0 + j mod group
// for row j), with the per-row calls' bits.
func softmaxRows(rows [][]float32, scale float32, sinks []float32, h0, group int) {
	if softmaxRowsVec(rows, scale, sinks, h0, group) {
		return
	}
	for j, s := range rows {
		scaleScores(s, scale)
		softmaxSink(s, sinks, h0+j%group)
	}
}

// evenRows reports whether rows n of xs start stride elements apart, so
// a tile can address them from the first. It compares addresses as
// integers: a pointer formed past the first row's allocation, when the
// rows are separate ones, is one the collector may take for a bad pointer
// (make test-engine-checkptr).
func evenRows(xs [][]float32, stride int) bool {
	base := uintptr(unsafe.Pointer(&xs[0][0]))
	for i := 1; i < len(xs); i++ {
		if uintptr(unsafe.Pointer(&xs[i][0])) != base+uintptr(4*i*stride) {
			return false
		}
	}
	return true
}

// maxScaled32 is the largest of float32(s[t]·scale) for scale > 0: the
// largest score times scale, since rounding keeps the order. The vector
// softmaxes scale in the exponentials' pass rather than storing scaled
// scores first, one pass over the row fewer.
func maxScaled32(s []float32, scale float32) float32 {
	return max32(s) * scale
}
