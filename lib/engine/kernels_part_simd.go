//go:build goexperiment.simd && amd64

package engine

import "simd/archsimd"

// A row's last few lanes on the 8-lane (AVX2) paths go through archsimd's
// SlicePart loads and stores (masked, no call) when the slice's capacity
// holds a whole vector, and through a zeroed buffer on the stack
// otherwise: SlicePart views the slice as a whole vector's array
// (*[8]float32), which breaks unsafe's rules when the slice's allocation
// is shorter than a vector, and checkptr (on under -race) stops there. The
// lanes and their values are the same either way: a masked load zeroes the
// lanes past the slice as the buffer does, and only the slice's lanes are
// stored. The buffer's copy is a runtime.memmove call, and copying back
// what a vector store has just written is slow (docs/engine-measurement.md).

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
