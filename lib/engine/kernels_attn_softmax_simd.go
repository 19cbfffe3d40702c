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
// so the bits are the same. Without AVX-512 (softmaxGradY) the same
// passes run on pairs of 4-lane vectors after expScores32's AVX2 path.
// It reports whether it ran (AVX-512 or softmaxGradY, sixteen keys or
// more).
func softmaxGrad8(p []float64, sc, dp []float32, scale, sink float32) bool {
	n := len(sc)
	if !useSIMD || !expVec || (!avx512 && !softmaxGradY) || n < 16 || len(p) < n || len(dp) < n {
		return false
	}
	p, dp = p[:n], dp[:n]
	mx := max(sink, maxScaled32(sc, scale))
	var s [8]float64
	var sum float64
	if avx512 {
		expScores16(p, sc, scale, mx, &s)
		archsimd.ClearAVXUpperBits() // scalar Go float code follows (docs/engine-attention.md, "VZEROUPPER in attention")
		sum = sum8(&s) + sinkTerm(sink, mx)
	} else {
		sum = expScores32(p, sc, scale, mx) + sinkTerm(sink, mx)
	}
	n8 := n &^ 7
	r := 1 / sum
	if avx512 {
		mulDot8(p[:n8], dp, r, &s)
	} else {
		mulDot4x2(p[:n8], dp, r, &s)
	}
	archsimd.ClearAVXUpperBits()
	for t := n8; t < n; t++ {
		p[t] *= r
		s[0] += float64(p[t] * float64(dp[t]))
	}
	dsum := sum8(&s)
	if avx512 {
		dsProbs8(sc, dp, p[:n8], dsum, float64(scale))
	} else {
		dsProbs4x2(sc, dp, p[:n8], dsum, float64(scale))
	}
	archsimd.ClearAVXUpperBits()
	dsTail(sc[n8:], dp[n8:], p[n8:], dsum, float64(scale))
	return true
}

// softmaxGradY has softmaxGrad8 run without AVX-512 too, in pairs of
// 4-lane vectors (mulDot4x2, dsProbs4x2): softmaxGrad's 4-lane path made
// separate passes for the scaling by 1/Σ, Σ p·dp and ds, and rounded the
// probabilities to float32 in a scalar loop, 14% of a 2048-token
// backward's samples on AVX2 (profile, 2026-11-30). Same operations per
// element and the same eight lanes, so the same bits.
var softmaxGradY = true

// mulDot4x2 is mulDot8 on two 4-lane vectors: lanes 0-3 and 4-7.
func mulDot4x2(p []float64, dp []float32, r float64, s *[8]float64) {
	rv := bc4(r)
	var a, b f64x4
	for i := 0; i+8 <= len(p); i += 8 {
		x := archsimd.LoadFloat64x4((*[4]float64)(p[i : i+4])).Mul(rv)
		y := archsimd.LoadFloat64x4((*[4]float64)(p[i+4 : i+8])).Mul(rv)
		x.Store((*[4]float64)(p[i : i+4]))
		y.Store((*[4]float64)(p[i+4 : i+8]))
		a = a.Add(x.Mul(load4(dp[i:])))
		b = b.Add(y.Mul(load4(dp[i+4:])))
	}
	a.Store((*[4]float64)(s[:4]))
	b.Store((*[4]float64)(s[4:]))
}

// dsProbs4x2 is dsProbs8 on 4-lane vectors.
func dsProbs4x2(sc, dp []float32, p []float64, dsum, scale float64) {
	ds, sv := bc4(dsum), bc4(scale)
	for i := 0; i+4 <= len(p); i += 4 {
		x := archsimd.LoadFloat64x4((*[4]float64)(p[i : i+4]))
		store4(sc[i:], x.Mul(load4(dp[i:]).Sub(ds)).Mul(sv))
		store4(dp[i:], x)
	}
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
