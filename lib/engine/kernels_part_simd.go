//go:build goexperiment.simd && amd64

package engine

import "simd/archsimd"

// A row's last few lanes go through a zeroed buffer on the stack rather
// than archsimd's SlicePart loads and stores: those view the slice as a
// whole vector's array (*[16]float32), which breaks unsafe's rules when
// the slice's allocation is shorter than a vector, and checkptr (on under
// -race) stops there. The lanes and their values are the same: a masked
// load zeroes the lanes past the slice as the buffer does, and only the
// slice's lanes are copied back.

func loadPart16(s []float32) f32x16 {
	var b [16]float32
	copy(b[:], s)
	return archsimd.LoadFloat32x16(&b)
}

func storePart16(x f32x16, s []float32) {
	var b [16]float32
	x.Store(&b)
	copy(s, b[:])
}

func loadPart8f(s []float32) archsimd.Float32x8 {
	var b [8]float32
	copy(b[:], s)
	return archsimd.LoadFloat32x8(&b)
}

func storePart8f(x archsimd.Float32x8, s []float32) {
	var b [8]float32
	x.Store(&b)
	copy(s, b[:])
}

func storePart64x8(x f64x8, s []float64) {
	var b [8]float64
	x.Store(&b)
	copy(s, b[:])
}
