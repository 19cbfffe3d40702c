//go:build goexperiment.simd && amd64

package export

import "simd/archsimd"

// deltaLanes: AVX-512 present.
var deltaLanes = archsimd.X86.AVX512()

// addRows4Vector adds to v[i·in+j] row i of b (four rows of r, B' rows)
// times A, for j < n (n a multiple of 32) and reports whether it did. Each A row is loaded once for the four output rows (the per-row
// kernel reloads it for every row, and A is what the merge streams). Each
// lane sums its rank terms in order by fused multiply-adds from zero, as
// deltaColsAVX2 does, then adds the sum to v, so the bits are deltaRow's
// plus the add.
func addRows4Vector(v, b, a []float32, r, in, n int) bool {
	if !deltaLanes || n == 0 {
		return false
	}
	_, _, _ = v[3*in+n-1], b[4*r-1], a[(r-1)*in+n-1]
	for j := 0; j < n; j += 32 {
		var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x16
		for k := range r {
			row := a[k*in+j : k*in+j+32]
			a0, a1 := archsimd.LoadFloat32x16Slice(row[:16]), archsimd.LoadFloat32x16Slice(row[16:])
			b0, b1 := archsimd.BroadcastFloat32x16(b[k]), archsimd.BroadcastFloat32x16(b[r+k])
			c00, c01, c10, c11 = b0.MulAdd(a0, c00), b0.MulAdd(a1, c01), b1.MulAdd(a0, c10), b1.MulAdd(a1, c11)
			b2, b3 := archsimd.BroadcastFloat32x16(b[2*r+k]), archsimd.BroadcastFloat32x16(b[3*r+k])
			c20, c21, c30, c31 = b2.MulAdd(a0, c20), b2.MulAdd(a1, c21), b3.MulAdd(a0, c30), b3.MulAdd(a1, c31)
		}
		for i, c := range [8]archsimd.Float32x16{c00, c01, c10, c11, c20, c21, c30, c31} {
			x := v[(i/2)*in+j+16*(i%2):][:16]
			archsimd.LoadFloat32x16Slice(x).Add(c).StoreSlice(x)
		}
	}
	archsimd.ClearAVXUpperBits()
	return true
}
