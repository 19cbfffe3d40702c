//go:build goexperiment.simd && amd64

package engine

import (
	"testing"

	"simd/archsimd"
)

// TestPartLoadsStoresKeepToTheSlice: the partial-vector loads and stores
// touch a row's n lanes only, loading the lanes past n as zero, both when
// the slice's allocation ends at n (the stack buffer) and when it runs on
// (the masked SlicePart path): sentinels past n are neither loaded nor
// overwritten.
func TestPartLoadsStoresKeepToTheSlice(t *testing.T) {
	if !useSIMD || !avx512 {
		t.Skip("no AVX-512 on this CPU")
	}
	for _, room := range []int{0, 16} {
		for n := 0; n <= 16; n++ {
			var l16 [16]float32
			loadPart16(partRow(n, room)).Store(&l16)
			checkLanes(t, "loadPart16", n, room, l16[:], 0)
			var l8 [8]float32
			loadPart8f(partRow(min(n, 8), room)).Store(&l8)
			checkLanes(t, "loadPart8f", min(n, 8), room, l8[:], 0)

			s := partRow(n, room)
			storePart16(bc16(100), s)
			checkStored(t, "storePart16", n, room, s)
			s = partRow(min(n, 8), room)
			storePart8f(archsimd.BroadcastFloat32x8(100), s)
			checkStored(t, "storePart8f", min(n, 8), room, s)
			d := make([]float64, min(n, 8), min(n, 8)+room)
			for i := range d[:cap(d)] {
				d[:cap(d)][i] = -7
			}
			storePart64x8(bc8(100), d)
			for i, v := range d[:cap(d)] {
				if want := partWant(i, len(d), 100, -7); v != float64(want) {
					t.Fatalf("storePart64x8 n=%d room=%d: element %d = %v, want %v", len(d), room, i, v, want)
				}
			}
		}
	}
}

// partRow is 1..n with room more elements of capacity holding -7.
func partRow(n, room int) []float32 {
	s := make([]float32, n+room)
	for i := range s {
		s[i] = partWant(i, n, float32(i+1), -7)
	}
	return s[:n]
}

func partWant(i, n int, in, past float32) float32 {
	if i < n {
		return in
	}
	return past
}

// checkLanes requires lanes 1..n, then past.
func checkLanes(t *testing.T, what string, n, room int, lanes []float32, past float32) {
	t.Helper()
	for i, v := range lanes {
		if want := partWant(i, n, float32(i+1), past); v != want {
			t.Fatalf("%s n=%d room=%d: lane %d = %v, want %v", what, n, room, i, v, want)
		}
	}
}

// checkStored requires 100 in s and the sentinels past it.
func checkStored(t *testing.T, what string, n, room int, s []float32) {
	t.Helper()
	for i, v := range s[:cap(s)] {
		if want := partWant(i, n, 100, -7); v != want {
			t.Fatalf("%s n=%d room=%d: element %d = %v after the store, want %v", what, n, room, i, v, want)
		}
	}
}
