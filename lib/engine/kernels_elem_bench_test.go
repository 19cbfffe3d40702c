package engine

import (
	"math"
	"testing"
)

// BenchmarkElementwise times each elementwise kernel on one goroutine at
// the Qwen3-0.6B widths (vocabulary 151936, hidden 1024, intermediate
// 3072, head dimension 128), reporting CPU-ns per element (process CPU
// time, which a loaded machine disturbs less than wall time), so the
// kernels' variants can be compared in one run (make a test binary of each
// and run them alternately).
func BenchmarkElementwise(b *testing.B) {
	const vocab, hidden, inter, headDim = 151936, 1024, 3072, 128
	r := newRNG(5)
	vec := func(n int, scale float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = (2*r.uniform32() - 1) * scale
		}
		return x
	}
	logits, row, e := vec(vocab, 8), make([]float32, vocab), make([]float64, vocab)
	scores, p64 := make([]float32, 2048), make([]float64, 2048)
	g, u, h, du := vec(inter, 4), vec(inter, 2), make([]float32, inter), make([]float32, inter)
	x, w, dy, dx := vec(hidden, 2), vec(hidden, 1), vec(hidden, 1), make([]float32, hidden)
	q0, cos, sin := vec(16*headDim, 2), vec(headDim/2, 1), vec(headDim/2, 1)
	q := make([]float32, len(q0))
	pw, pm, pv, pg := vec(1<<16, 1), vec(1<<16, 0.1), vec(1<<16, 0.01), vec(1<<16, 1)
	for i := range pv {
		pv[i] = float32(math.Abs(float64(pv[i])))
	}
	a := adamConsts{coef: 1, b1: 0.9, b2: 0.95, decay: 1, stepSize: 1e-4, bc2: 0.2, eps: 1e-12}
	cases := []struct {
		name string
		n    int
		fn   func()
	}{
		{"logSumExp", vocab, func() { logSumExp(logits, 1) }},
		{"lossRowGrad", vocab, func() {
			copy(row, logits)
			_, sum := logSumExpKeep(e, row)
			scaleExps(row, e, -1/sum)
		}},
		{"expScores32Nil", 2048, func() { copy(scores, logits[:2048]); expScores32(nil, scores, 1, 8) }},
		{"expScores32", 2048, func() { copy(scores, logits[:2048]); expScores32(p64, scores, 0.125, 1) }},
		{"expScores32Rows", 256 * 257 / 2, func() {
			// Attention's rows: every length from 1 to 256, as causal
			// attention's queries see their keys.
			for n := 1; n <= 256; n++ {
				copy(scores, logits[:n])
				expScores32(p64, scores[:n], 0.125, 1)
			}
		}},
		{"siluMul", inter, func() { siluMul(h, g, u) }},
		{"siluMulBackward", inter, func() { copy(h, dy); siluMulBackward(h, du, g, u) }},
		{"rmsNorm", hidden, func() { rmsNorm(dx, x, w, 1e-6) }},
		{"rmsNormBackward", hidden, func() { rmsNormBackward(dx, dy, x, w, 1e-6) }},
		{"rope", len(q), func() {
			// From the same values each time: cos and sin here are not a
			// rotation's, and repeated use would reach subnormals.
			copy(q, q0)
			applyRope(q, headDim, cos, sin)
			ropeBackward(q, headDim, cos, sin)
		}},
		{"adamUpdate", len(pg), func() { adamUpdate(pw, pm, pv, pg, a) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			c0 := processCPU()
			for b.Loop() {
				c.fn()
			}
			b.ReportMetric((processCPU()-c0)*1e9/float64(b.N*c.n), "cpu-ns/elem")
		})
	}
}
