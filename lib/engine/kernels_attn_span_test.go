//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"testing"
)

// TestWeightedBlockLongSpan: attnWeightedBlock over contiguous value rows
// past weightedSpan (the register tiles' chunk of rows), from a block
// that starts mid-sequence, gives every output the bits of weightedScalar
// (each element's terms in ascending row order, added to what the output
// held), with the 512-bit and 256-bit kernels.
func TestWeightedBlockLongSpan(t *testing.T) {
	defer func(old bool) { avx512 = old }(avx512)
	for _, hd := range []int{64, 72, 128} {
		for _, group := range []int{1, 2, 3} {
			for _, p0 := range []int{weightedSpan - 3, 2*weightedSpan + 5} {
				for _, wide := range []bool{false, avx512} {
					avx512 = wide
					t.Run(fmt.Sprintf("hd%d-g%d-p%d-wide%v", hd, group, p0, wide), func(t *testing.T) {
						checkWeightedSpan(t, hd, group, p0)
					})
				}
			}
		}
	}
}

func checkWeightedSpan(t *testing.T, hd, group, p0 int) {
	nq := 7 * group // seven positions
	nk := p0 + nq/group
	rows := flat(randRows(nk, hd, 11))
	sc := flat(randRows(nq, nk, 12))
	outs, ref := randRows(nq, hd, 13), randRows(nq, hd, 13)
	got := flat(outs)
	for j := range outs { // outs as rows of one slab (the kernels' layout)
		outs[j] = got[j*hd : (j+1)*hd]
	}
	attnWeightedBlock(outs, sc, nk, group, p0, rows, hd, 0)
	for j, r := range ref {
		weightedScalar(r, sc[j*nk:j*nk+p0+j/group+1], rows, hd, 0)
	}
	if want := flat(ref); !bitsEqual(got, want) {
		t.Fatalf("differs from weightedScalar at element %s", firstDiff(got, want))
	}
}
