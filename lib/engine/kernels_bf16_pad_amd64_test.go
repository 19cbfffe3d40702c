package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// staleBF16 is a packing buffer of size elements left full of bfloat16
// NaNs, as a pooled buffer holds whatever its last user packed.
func staleBF16(size int) *[]uint16 {
	b := make([]uint16, size)
	for i := range b {
		b[i] = 0x7fc1
	}
	return &b
}

// TestBF16PackOverStaleRows: packing into a buffer full of NaNs gives the
// bits of a fresh buffer on both kernels, for batches whose last group
// of tokens takes the one-block kernels (which read only their own rows:
// the rows past the vectors stay stale) and the two-block ones (17-31
// tokens left: those rows are zeroed), and columns past a multiple of 32.
func TestBF16PackOverStaleRows(t *testing.T) {
	needBF16(t)
	rng := rand.New(rand.NewPCG(21, 22))
	for _, cols := range []int{64, 100} {
		w := randBF16Mat(rng, 48, cols)
		for _, m := range []int{1, 3, 15, 16, 17, 20, 31, 32, 33, 49, 50} {
			xs := randVecs(rng, m, cols)
			for _, amx := range []bool{false, true} {
				if amx && !amxReady() {
					continue
				}
				name := fmt.Sprintf("cols=%d m=%d amx=%v", cols, m, amx)
				withAMX(amx, func() { checkStalePack(t, name, w, xs) })
			}
		}
	}
}

func checkStalePack(t *testing.T, name string, w mat, xs [][]float32) {
	m, ld := len(xs), bf16Pitch(w.cols)
	var fresh []uint16
	want := newOutputs(m, w.rows)
	bf16Rows(w, packBF16Rows(xs, w.cols, &fresh), m, want, 0, w.rows, false)
	stale := staleBF16((m + 31) / 32 * 32 * ld)
	xb := packBF16Rows(xs, w.cols, stale)
	if m%32 > 16 && slices.ContainsFunc(xb[m*ld:], func(v uint16) bool { return v != 0 }) {
		t.Fatalf("%s: the rows past the vectors that the two-block kernels read are not zero", name)
	}
	got := newOutputs(m, w.rows)
	bf16Rows(w, xb, m, got, 0, w.rows, false)
	for b := range got {
		if !sameBits(got[b], want[b]) {
			t.Fatalf("%s: vector %d packed over stale rows differs from a fresh buffer", name, b)
		}
	}
}
