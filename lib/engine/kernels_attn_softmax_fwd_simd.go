//go:build goexperiment.simd && amd64

package engine

import (
	"simd/archsimd"
	"unsafe"
)

// softmaxRowsVec is softmaxRows with the 512-bit kernels: per row one
// pass takes the scores' maximum, one scales them, takes the
// exponentials (exp32 in sixteen lanes, the last few masked) and sums
// them in float64 lanes (expScores16, the backward's sum), and one
// multiplies by the reciprocal. It reports whether it ran.
//
// With AVX2 (attnAVX2 and expSumAVX2) the same passes run on eight lanes
// (attnExpSum8), the reciprocal's multiply in normalise: without it the
// rows took scaleScores' pass and softmaxSink's (the exponentials of the
// scaled scores), the same bits.
func softmaxRowsVec(rows [][]float32, scale float32, sinks []float32, h0, group int) bool {
	if !useSIMD || !simdOK || !expVec {
		return false
	}
	if !avx512 {
		return softmaxRows8(rows, scale, sinks, h0, group)
	}
	for j, s := range rows {
		mx, extra := rowMaxSink(s, scale, sinks, h0+j%group)
		var l [8]float64
		expScores16(nil, s, scale, mx, &l)
		archsimd.ClearAVXUpperBits() // scalar Go float code follows (docs/engine-attention.md, "VZEROUPPER in attention")
		scale16(s, float32(1/(sum8(&l)+extra)))
	}
	return true
}

// rowMaxSink returns a row's largest scaled score and, with sinks, the
// numerator of its head's sink sinks[h], the sink counted in the maximum.
func rowMaxSink(s []float32, scale float32, sinks []float32, h int) (float32, float64) {
	mx := maxScaled32(s, scale)
	if sinks == nil {
		return mx, 0
	}
	mx = max(sinks[h], mx)
	return mx, float64(exp32(sinks[h] - mx))
}

// softmaxRows8 is softmaxRowsVec's AVX2 path; it reports whether it ran.
func softmaxRows8(rows [][]float32, scale float32, sinks []float32, h0, group int) bool {
	if !attnAVX2 || !expSumAVX2 {
		return false
	}
	for j, s := range rows {
		mx, extra := rowMaxSink(s, scale, sinks, h0+j%group)
		var l [8]float64
		expScores8(nil, s, scale, mx, &l)
		archsimd.ClearAVXUpperBits() // scalar Go float code follows (docs/engine-attention.md, "VZEROUPPER in attention")
		normalise(s, sum8(&l)+extra)
	}
	return true
}

// max16Vec is max32Vec on sixteen lanes in two chains (a single chain of
// eight waited on each max: a row of 2048 scores took twice the time of
// its 16-lane scaling before), the last 1..31 through whole vectors that
// overlap elements already seen (max is idempotent). It needs AVX-512
// and 16 elements and reports whether it ran.
func max16Vec(s []float32) (float32, bool) {
	if !useSIMD || !simdOK || !avx512 || len(s) < 16 {
		return 0, false
	}
	n := len(s)
	p := unsafe.Pointer(&s[0])
	m, m2 := v16(p, 0), v16(p, n-16)
	i := 16
	for ; i+32 <= n; i += 32 {
		m, m2 = m.Max(v16(p, i)), m2.Max(v16(p, i+16))
	}
	if i < n {
		m = m.Max(v16(p, min(i, n-16)))
	}
	m = m.Max(m2)
	h := m.GetLo().Max(m.GetHi()) // halve in registers: Go's scalar max
	q := h.GetLo().Max(h.GetHi()) // over 16 had been 2% of a forward
	var l [4]float32
	q.Store(&l)
	archsimd.ClearAVXUpperBits() // scalar Go float code follows (docs/engine-attention.md, "VZEROUPPER in attention")
	return max(max(l[0], l[1]), max(l[2], l[3])), true
}

// scale16 multiplies x by a, sixteen at a time, then the rest.
func scale16(x []float32, a float32) {
	n := len(x) &^ 15
	if n > 0 {
		av := archsimd.BroadcastFloat32x16(a)
		p := unsafe.Pointer(&x[0])
		for i := 0; i < n; i += 16 {
			st16(p, i, v16(p, i).Mul(av))
		}
		archsimd.ClearAVXUpperBits()
	}
	for i := n; i < len(x); i++ {
		x[i] *= a
	}
}
