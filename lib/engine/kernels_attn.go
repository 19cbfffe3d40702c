package engine

// Attention products: one query (or one output gradient) against many
// cached key/value rows per call, so the per-call cost of a head of 16-128
// elements is paid once per head rather than once per position. The cache
// is a flat slab: position t's head starts at t*stride+off. Each kernel
// keeps the order of the per-position dot1/axpy calls it replaces, so the
// vector paths (kernels_attn_simd.go) give the same bits as these loops.

// attnDots writes dst[t] = dot1(rows[t*stride+off:][:len(q)], q) for every
// t < len(dst): one query's raw scores against len(dst) cached rows.
func attnDots(dst, q, rows []float32, stride, off int) {
	hd := len(q)
	for t := attnDotsVec(dst, q, rows, stride, off); t < len(dst); t++ {
		o := t*stride + off
		dst[t] = dot1(rows[o:o+hd], q)
	}
}

// attnWeighted adds Σ_t p[t]·rows[t*stride+off:][:len(out)] to out, each
// element summed in ascending t (as successive axpy calls would).
func attnWeighted(out, p, rows []float32, stride, off int) {
	for i := attnWeightedVec(out, p, rows, stride, off); i < len(out); i++ {
		s, o := out[i], off+i
		for _, a := range p {
			s += float32(a * rows[o])
			o += stride
		}
		out[i] = s
	}
}

// attnScatter adds coef[t]·x to dst[t][off:off+len(x)] for every t <
// len(coef): one query's contribution to many keys' (or values') gradients.
func attnScatter(dst [][]float32, off int, coef, x []float32) {
	hd := len(x)
	for t, a := range coef {
		y := dst[t][off : off+hd]
		i := attnAxpyVec(y, a, x)
		for ; i < hd; i++ {
			y[i] += float32(a * x[i])
		}
	}
}
