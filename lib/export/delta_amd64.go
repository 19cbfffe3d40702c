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
