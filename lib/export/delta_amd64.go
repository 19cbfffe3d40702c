package export

import "golang.org/x/sys/cpu"

// haveAVX2 selects the vector kernel: 8 fused multiply-adds an instruction
// make the merge keep up with the disk (make bench-export).
var haveAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// haveAVX512 selects the four-row kernels (delta_avx512_amd64.s).
var haveAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

//go:noescape
func deltaColsAVX2(d, b, a *float32, r, in, n int)

// deltaVector computes the first n columns of d = bᵀ·A (n a multiple of
// 32) and reports whether it did.
func deltaVector(d, b, a []float32, r, in, n int) bool {
	if !haveAVX2 || n == 0 {
		return false
	}
	_ = a[(r-1)*in+n-1]
	_ = d[n-1]
	_ = b[r-1]
	deltaColsAVX2(&d[0], &b[0], &a[0], r, in, n)
	return true
}

//go:noescape
func mergeRowBF16(dst, src *byte, b, a *float32, r, in, n int)

// mergeRowVector merges one bfloat16 row in a single pass (widen, add
// B'·A, round) where the CPU has the vector kernel and the row is whole
// blocks of 64 columns, and reports whether it did.
func mergeRowVector(dst, src []byte, b, a []float32, r, in int) bool {
	if !haveAVX2 || in%64 != 0 || in == 0 {
		return false
	}
	_ = a[r*in-1]
	_ = b[r-1]
	_, _ = dst[2*in-1], src[2*in-1]
	mergeRowBF16(&dst[0], &src[0], &b[0], &a[0], r, in, in)
	return true
}

//go:noescape
func addRows4AVX512(v *float32, ldv int, b, a *float32, r, in, n int)

// addRows4Vector adds to v[i·ldv+j] row i of b (four rows of r, B' rows)
// times A (rows of in), for j < n (n a multiple of 32), and reports
// whether it did. Each lane sums its rank terms in order by fused
// multiply-adds from zero, as deltaColsAVX2 does, then adds the sum to v,
// so the bits are deltaRow's plus the add.
func addRows4Vector(v []float32, ldv int, b, a []float32, r, in, n int) bool {
	if !haveAVX512 || n == 0 || r == 0 {
		return false
	}
	_, _, _ = v[3*ldv+n-1], b[4*r-1], a[(r-1)*in+n-1]
	addRows4AVX512(&v[0], ldv, &b[0], &a[0], r, in, n)
	return true
}

//go:noescape
func mergeRows4BF16AVX512(dst, src *byte, b, a *float32, r, in, n int)

// mergeRows4Vector is mergeRowVector for four consecutive rows (of in
// columns each, b's four rows of r) that share A, and reports whether it
// did: the same bits, each row of A loaded once for the four.
func mergeRows4Vector(dst, src []byte, b, a []float32, r, in int) bool {
	if !haveAVX512 || in%64 != 0 || in == 0 || r == 0 {
		return false
	}
	_, _ = a[r*in-1], b[4*r-1]
	_, _ = dst[8*in-1], src[8*in-1]
	mergeRows4BF16AVX512(&dst[0], &src[0], &b[0], &a[0], r, in, in)
	return true
}
