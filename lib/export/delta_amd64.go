package export

import "golang.org/x/sys/cpu"

// haveAVX2 selects the vector kernel: 8 fused multiply-adds an instruction
// make the merge keep up with the disk (make bench-export).
var haveAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

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
