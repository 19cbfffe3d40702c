//go:build goexperiment.simd && amd64

package quant

import "simd/archsimd"

// int4RoundVector is int4Round over src's multiple of 16 (s > 0), and how
// many that was: float32 division, rounding to even and the clamp, as the
// scalar body does them.
func int4RoundVector(q []int32, src []float32, s float32) int {
	if !fp8Lanes {
		return 0
	}
	n := len(src) &^ 15
	sv, lo, hi := archsimd.BroadcastFloat32x16(s), archsimd.BroadcastFloat32x16(-8), archsimd.BroadcastFloat32x16(7)
	for j := 0; j < n; j += 16 {
		x := archsimd.LoadFloat32x16Slice(src[j : j+16]).Div(sv).RoundToEvenScaled(0)
		x.Max(lo).Min(hi).ConvertToInt32().StoreSlice(q[j : j+16])
	}
	archsimd.ClearAVXUpperBits()
	return n
}
