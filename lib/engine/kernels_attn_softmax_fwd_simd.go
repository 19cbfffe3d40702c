//go:build goexperiment.simd && amd64

package engine

import (
	"simd/archsimd"
	"unsafe"
)

// softmaxRowsVec is softmaxRows with the 512-bit kernels: per row one
// pass takes the scores' maximum, one scales them and takes the
// exponentials (exp32 in sixteen lanes, the last few masked), and the
// float64 sums, which must stay serial and ascending (softmax32's bits),
// run eight rows at a time as independent chains (sumRows8): one row's
// chain waited on every add. It reports whether it ran.
func softmaxRowsVec(rows [][]float32, scale float32, sinks []float32, h0, group int) bool {
	if !useSIMD || !simdOK || !expVec || !avx512 {
		return false
	}
	var extra [8]float64
	for j0 := 0; j0 < len(rows); j0 += 8 {
		j1 := min(j0+8, len(rows))
		for j := j0; j < j1; j++ {
			s := rows[j]
			mx := maxScaled32(s, scale)
			extra[j-j0] = 0
			if sinks != nil {
				sink := sinks[h0+j%group]
				mx = max(sink, mx)
				extra[j-j0] = float64(exp32(sink - mx))
			}
			expScaleShift32x16(s, scale, mx)
			archsimd.ClearAVXUpperBits() // scalar Go float code follows (doc.go)
		}
		sumRows8(rows[j0:j1], &extra)
		for j := j0; j < j1; j++ {
			scale16(rows[j], float32(1/extra[j-j0]))
		}
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
	archsimd.ClearAVXUpperBits() // scalar Go float code follows (doc.go)
	return max(max(l[0], l[1]), max(l[2], l[3])), true
}

// sumRows8 is sumRows4 for up to eight rows: eight evenly spaced rows
// (a block's score rows outside sliding windows) take their common
// length through attnSumRows8, a row per float64 lane (four scalar
// chains had been latency-bound: a fifth of the forward softmax), then
// each row its rest; other rows go four at a time.
func sumRows8(rows [][]float32, sums *[8]float64) {
	m, ld := 0, 0
	if len(rows) == 8 {
		m = len(rows[0])
		for _, r := range rows[1:] {
			m = min(m, len(r))
		}
		m &^= 7
	}
	if m > 0 {
		var even bool
		if ld, even = stridedRows(rows, 1); !even {
			m = 0
		}
	}
	if m == 0 {
		lo, hi := (*[4]float64)(sums[:4]), (*[4]float64)(sums[4:])
		sumRows4(rows[:min(4, len(rows))], lo)
		if len(rows) > 4 {
			sumRows4(rows[4:], hi)
		}
		return
	}
	var s [8]float64
	attnSumRows8(&s[0], &rows[0][0], uintptr(4*ld), m)
	for j, r := range rows {
		v := s[j]
		for _, e := range r[m:] {
			v += float64(e)
		}
		sums[j] = v + sums[j]
	}
}

// sumRows4 sets sums[j] to Σ rows[j] in float64, ascending (normalise's
// order), plus the extra term sums[j] held, for up to four rows: their
// common length as four chains in one loop, then each row's rest.
func sumRows4(rows [][]float32, sums *[4]float64) {
	var s [4]float64
	m := 0
	if len(rows) == 4 {
		m = min(len(rows[0]), len(rows[1]), len(rows[2]), len(rows[3]))
		a, b, c, d := rows[0][:m], rows[1][:m], rows[2][:m], rows[3][:m]
		var s0, s1, s2, s3 float64
		for t := range a {
			s0 += float64(a[t])
			s1 += float64(b[t])
			s2 += float64(c[t])
			s3 += float64(d[t])
		}
		s = [4]float64{s0, s1, s2, s3}
	}
	for j, r := range rows {
		v := s[j]
		for _, e := range r[m:] {
			v += float64(e)
		}
		sums[j] = v + sums[j]
	}
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
