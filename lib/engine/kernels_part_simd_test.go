//go:build goexperiment.simd && amd64

package engine

import (
	"testing"

	"simd/archsimd"
)

// TestPartLoadsStoresKeepToTheSlice: the partial-vector load and store
// touch a row's n lanes only, loading the lanes past n as zero, both when
// the slice's allocation ends at n (the stack buffer) and when it runs on
// (the masked SlicePart path): sentinels past n are neither loaded nor
// overwritten.
func TestPartLoadsStoresKeepToTheSlice(t *testing.T) {
	if !useSIMD || !archsimd.X86.AVX2() {
		t.Skip("no AVX2 on this CPU")
	}
	for _, room := range []int{0, 8} {
		for n := 0; n <= 8; n++ {
			var l8 [8]float32
			loadPart8f(partRow(n, room)).Store(&l8)
			for i, v := range l8 {
				if want := partWant(i, n, float32(i+1), 0); v != want {
					t.Fatalf("loadPart8f n=%d room=%d: lane %d = %v, want %v", n, room, i, v, want)
				}
			}
			s := partRow(n, room)
			storePart8f(archsimd.BroadcastFloat32x8(100), s)
			for i, v := range s[:cap(s)] {
				if want := partWant(i, n, 100, -7); v != want {
					t.Fatalf("storePart8f n=%d room=%d: element %d = %v after the store, want %v", n, room, i, v, want)
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

// partWant is in for lanes below n, past beyond.
func partWant(i, n int, in, past float32) float32 {
	if i < n {
		return in
	}
	return past
}
