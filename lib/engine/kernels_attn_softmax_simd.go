//go:build goexperiment.simd && amd64

package engine

import (
	"math"
	"simd/archsimd"
)

// softmaxGrad8 is softmaxGrad on eight float64 lanes in three passes
// after the maximum (scores to exponentials and their lane sums; the
// division and Σ p·dp's lanes; ds and the float32 probabilities), where
// the 4-lane path made seven passes and a scalar one: each lane does the
// scalar body's IEEE operations and the two sums keep sumLanes' and
// dot64Lanes' lanes and tree, so the bits are the same. It reports
// whether it ran (AVX-512, sixteen keys or more).
func softmaxGrad8(p []float64, sc, dp []float32, scale, sink float64) bool {
	n := len(sc)
	if !useSIMD || !expVec || !avx512 || n < 16 || len(p) < n || len(dp) < n {
		return false
	}
	p, dp = p[:n], dp[:n]
	m, _ := max32Vec(sc)
	mx := max(sink, float64(m)*scale)
	var s [8]float64
	n8 := expScores8(p, sc, scale, mx, &s)
	archsimd.ClearAVXUpperBits() // scalar Go float code follows (doc.go)
	for t := n8; t < n; t++ {
		p[t] = exp64(float64(float64(sc[t])*scale) - mx)
		s[0] += p[t]
	}
	sum := sum8(&s)
	if !math.IsInf(sink, -1) {
		sum += exp64(sink - mx)
	}
	divDot8(p[:n8], dp, sum, &s)
	archsimd.ClearAVXUpperBits()
	for t := n8; t < n; t++ {
		p[t] /= sum
		s[0] += float64(p[t] * float64(dp[t]))
	}
	dsum := sum8(&s)
	dsProbs8(sc, dp, p[:n8], dsum, scale)
	archsimd.ClearAVXUpperBits()
	dsTail(sc[n8:], dp[n8:], p[n8:], dsum, scale)
	return true
}

// expScores8 sets p[t] = exp64(float64(sc[t])·scale − mx) for the leading
// multiple of 8, stores their lane sums (lane t mod 8, ascending t) in s
// and returns how many it did.
func expScores8(p []float64, sc []float32, scale, mx float64, s *[8]float64) int {
	sv, m := bc8(scale), bc8(mx)
	ld := func(i int) f64x8 { return load8(sc[i:]).Mul(sv).Sub(m) }
	var acc f64x8
	i := 0
	for ; i+16 <= len(sc); i += 16 {
		a, b := exp8x2(ld(i), ld(i+8))
		a.Store((*[8]float64)(p[i : i+8]))
		b.Store((*[8]float64)(p[i+8 : i+16]))
		acc = acc.Add(a).Add(b)
	}
	if i+8 <= len(sc) {
		a, _ := exp8x2(ld(i), ld(i))
		a.Store((*[8]float64)(p[i : i+8]))
		acc = acc.Add(a)
		i += 8
	}
	acc.Store(s)
	return i
}

// divDot8 divides p (a multiple of 8 long) by sum and stores in s the
// lane sums of the products p[t]·dp[t], each rounded before its add.
func divDot8(p []float64, dp []float32, sum float64, s *[8]float64) {
	d := bc8(sum)
	var acc f64x8
	for i := 0; i+8 <= len(p); i += 8 {
		x := archsimd.LoadFloat64x8((*[8]float64)(p[i : i+8])).Div(d)
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
