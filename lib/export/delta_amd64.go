package export

import "github.com/tinkershell/tinker/lib/cpufeat"

// haveAVX2 selects the vector kernel: 8 fused multiply-adds an instruction
// make the merge keep up with the disk (make bench-export). This and
// haveAVX512 are functions, not package variables, which would be init
// code every start of tinker runs (cmd/tinker/app's
// TestOwnInitCodeStaysSmall).
func haveAVX2() bool { return cpufeat.AVX2FMA() }

// haveAVX512 selects the four-row kernels (delta_avx512_amd64.s).
func haveAVX512() bool { return cpufeat.AVX512() }

//go:noescape
func deltaColsAVX2(d, b, a *float32, r, in, n int)

// deltaVector computes the first n columns of d = bᵀ·A (n a multiple of
// 32) and reports whether it did.
func deltaVector(d, b, a []float32, r, in, n int) bool {
	if !haveAVX2() || n == 0 {
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
	if !haveAVX2() || in%64 != 0 || in == 0 {
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
	if !haveAVX512() || n == 0 || r == 0 {
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
	if !haveAVX512() || in%64 != 0 || in == 0 || r == 0 {
		return false
	}
	_, _ = a[r*in-1], b[4*r-1]
	_, _ = dst[8*in-1], src[8*in-1]
	mergeRows4BF16AVX512(&dst[0], &src[0], &b[0], &a[0], r, in, in)
	return true
}

//go:noescape
func fp8AddRows4AVX512(v *float32, ldv int, codes *byte, ldc int, s float32, b, a *float32, r, in, n int) uint32

// fp8AddRows4Vector sets v[i·ldv+j] (four rows, j < n, n a multiple of 32)
// to the E4M3 code codes[i·ldc+j] times s plus row i of b times A, the
// update added as addRows4Vector adds it, and returns the largest
// magnitude written as float32 bits; it reports whether it did. One pass
// where decoding first would store the block and load it again.
func fp8AddRows4Vector(v []float32, ldv int, codes []byte, ldc int, s float32, b, a []float32, r, in, n int) (uint32, bool) {
	if !haveAVX512() || n == 0 || n%32 != 0 || r == 0 {
		return 0, false
	}
	_, _, _, _ = v[3*ldv+n-1], codes[3*ldc+n-1], b[4*r-1], a[(r-1)*in+n-1]
	return fp8AddRows4AVX512(&v[0], ldv, &codes[0], ldc, s, &b[0], &a[0], r, in, n), true
}
