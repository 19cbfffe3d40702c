//go:build !amd64

package export

// haveAVX2: no vector kernels here (the FP8 tile path needs deltaVector).
func haveAVX2() bool { return false }

// haveAVX512: no four-row kernels here (MXFP4 strips stay whole).
func haveAVX512() bool { return false }

// deltaVector: no vector kernel here; deltaRow's loops do all columns.
func deltaVector(d, b, a []float32, r, in, n int) bool { return false }

// mergeRowVector: no vector kernel here.
func mergeRowVector(dst, src []byte, b, a []float32, r, in int) bool { return false }

// addRows4Vector: no vector kernel here; addDelta goes row by row.
func addRows4Vector(v []float32, ldv int, b, a []float32, r, in, n int) bool { return false }

// mergeRows4Vector: no vector kernel here.
func mergeRows4Vector(dst, src []byte, b, a []float32, r, in int) bool { return false }

// fp8AddRows4Vector: no vector kernel here.
func fp8AddRows4Vector(v []float32, ldv int, codes []byte, ldc int, s float32, b, a []float32, r, in, n int) (uint32, bool) {
	return 0, false
}
