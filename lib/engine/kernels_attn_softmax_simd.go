//go:build goexperiment.simd && amd64

package engine

import (
	"simd/archsimd"
)

// softmaxGrad8 is softmaxGrad on AVX-512 in three passes after the
// maximum (exponentials, widened, and their lane sums; the scaling by 1/Σ and
// Σ p·dp's lanes; ds and the float32 probabilities), where the 4-lane
// path made seven passes and a scalar one: each lane does the scalar
// body's IEEE operations and the two sums keep the scalar lanes and tree,
// so the bits are the same. It reports whether it ran (AVX-512, sixteen
// keys or more).
func softmaxGrad8(p []float64, sc, dp []float32, scale, sink float32) bool {
	n := len(sc)
	if !useSIMD || !expVec || !avx512 || n < 16 || len(p) < n || len(dp) < n {
		return false
	}
	p, dp = p[:n], dp[:n]
	mx := max(sink, maxScaled32(sc, scale))
	var s [8]float64
	expScores16(p, sc, scale, mx, &s)
	archsimd.ClearAVXUpperBits() // scalar Go float code follows (docs/engine-attention.md, "VZEROUPPER in attention")
	sum := sum8(&s) + sinkTerm(sink, mx)
	n8 := n &^ 7
	r := 1 / sum
	mulDot8(p[:n8], dp, r, &s)
	archsimd.ClearAVXUpperBits()
	for t := n8; t < n; t++ {
		p[t] *= r
		s[0] += float64(p[t] * float64(dp[t]))
	}
	dsum := sum8(&s)
	dsProbs8(sc, dp, p[:n8], dsum, float64(scale))
	archsimd.ClearAVXUpperBits()
	dsTail(sc[n8:], dp[n8:], p[n8:], dsum, float64(scale))
	return true
}

// mulDot8 multiplies p (a multiple of 8 long) by r and stores in s the
// lane sums of the products p[t]·dp[t], each rounded before its add.
func mulDot8(p []float64, dp []float32, r float64, s *[8]float64) {
	rv := bc8(r)
	var acc f64x8
	for i := 0; i+8 <= len(p); i += 8 {
		x := archsimd.LoadFloat64x8((*[8]float64)(p[i : i+8])).Mul(rv)
		x.Store((*[8]float64)(p[i : i+8]))
		acc = acc.Add(x.Mul(load8(dp[i:])))
	}
	acc.Store(s)
}

// dsProbs8 sets sc[t] = float32(p[t]·(dp[t]−dsum)·scale), then dp[t] =
// float32(p[t]), for t < len(p), a multiple of 8.
func dsProbs8(sc, dp []float32, p []float64, dsum, scale float64) {
	ds, sv := bc8(dsum), bc8(scale)
	for i := 0; i+8 <= len(p); i += 8 {
		x := archsimd.LoadFloat64x8((*[8]float64)(p[i : i+8]))
		store8(sc[i:], x.Mul(load8(dp[i:]).Sub(ds)).Mul(sv))
		store8(dp[i:], x)
	}
}
