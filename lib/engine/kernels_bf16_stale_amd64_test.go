package engine

import (
	"fmt"
	"math"
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

// TestBF16RowsOverStaleSums: bf16Rows's buffer of sums (pooled), left
// full of NaNs, gives the bits of a zeroed one on both kernels, for decoding's
// one to three tokens and batches, whole and partial row ranges, written
// and added: the kernels store every sum that bf16Put reads.
func TestBF16RowsOverStaleSums(t *testing.T) {
	needBF16(t)
	rng := rand.New(rand.NewPCG(23, 24))
	w := randBF16Mat(rng, 100, 96)
	for _, m := range []int{1, 3, 5, 20, 40} {
		var pp []uint16
		xb := packBF16Rows(randVecs(rng, m, w.cols), w.cols, &pp)
		for _, c := range []struct {
			lo, hi int
			acc    bool
		}{{0, 100, false}, {7, 90, false}, {0, 100, true}} {
			for _, amx := range []bool{false, true} {
				if amx && !amxReady() {
					continue
				}
				withAMX(amx, func() {
					want, got := newOutputs(m, w.rows), newOutputs(m, w.rows)
					bf16RowsOn(w, xb, m, want, c.lo, c.hi, c.acc, new(bf16Sums))
					stale := new(bf16Sums)
					for i := range stale {
						stale[i] = float32(math.NaN())
					}
					bf16RowsOn(w, xb, m, got, c.lo, c.hi, c.acc, stale)
					for b := range got {
						if !sameBits(got[b], want[b]) {
							t.Fatalf("m=%d %+v amx=%v: vector %d over stale sums differs from zeroed ones", m, c, amx, b)
						}
					}
				})
			}
		}
	}
}
