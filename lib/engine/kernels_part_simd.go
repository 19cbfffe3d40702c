//go:build goexperiment.simd && amd64

package engine

import "simd/archsimd"

// A row's last few lanes go through archsimd's SlicePart loads and stores
// (masked, no call) when the slice's capacity holds a whole vector, and
// through a zeroed buffer on the stack otherwise: SlicePart views the
// slice as a whole vector's array (*[16]float32), which breaks unsafe's
// rules when the slice's allocation is shorter than a vector, and checkptr
// (on under -race) stops there. The lanes and their values are the same
// either way: a masked load zeroes the lanes past the slice as the buffer
// does, and only the slice's lanes are stored. The buffer's copies were
// runtime.memmove calls, 4.6% of a 0.6B 2 × 512 step's profile when every
// 8-lane store of expScores16 took that path (issue 34).

func loadPart16(s []float32) f32x16 {
	if cap(s) >= 16 {
		return archsimd.LoadFloat32x16SlicePart(s)
	}
	var b [16]float32
	copy(b[:], s)
	return archsimd.LoadFloat32x16(&b)
}

func storePart16(x f32x16, s []float32) {
	if cap(s) >= 16 {
		x.StoreSlicePart(s)
		return
	}
	var b [16]float32
	x.Store(&b)
	copy(s, b[:])
}

func loadPart8f(s []float32) archsimd.Float32x8 {
	if cap(s) >= 8 {
		return archsimd.LoadFloat32x8SlicePart(s)
	}
	var b [8]float32
	copy(b[:], s)
	return archsimd.LoadFloat32x8(&b)
}

func storePart8f(x archsimd.Float32x8, s []float32) {
	if cap(s) >= 8 {
		x.StoreSlicePart(s)
		return
	}
	var b [8]float32
	x.Store(&b)
	copy(s, b[:])
}

func storePart64x8(x f64x8, s []float64) {
	if cap(s) >= 8 {
		x.StoreSlicePart(s)
		return
	}
	var b [8]float64
	x.Store(&b)
	copy(s, b[:])
}
