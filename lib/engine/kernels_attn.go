package engine

// Attention products of the forward pass: one query against many cached
// key/value rows per call, so the per-call cost of a head of 16-128
// elements is paid once per head rather than once per position. The cache
// is a flat slab: position t's head starts at t*stride+off. Each kernel
// keeps the order of the per-position dot1/axpy calls it replaces, so the
// vector paths (kernels_attn_simd.go) give the same bits as these loops.
// attentionBackward still calls dot1/axpy per position: the same kernels
// there measured slower at head dim 128 (BenchmarkAttention).

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
	if i0 == len(out) {
		return
	}
	y := out[i0:]
	for t, a := range p {
		o := t*stride + off + i0
		x := rows[o : o+len(y)]
		for i := range y {
			y[i] += float32(a * x[i])
		}
	}
}
