package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBF16ScoreTilesNextMatchesEmulation runs the attention's score
// kernels that prefetch the next call's keys (bf16ScoreTiles,
// avxBF16KernelsNx) over 1-9 query rows and 1-13 blocks of 16 keys (calls
// of six and the edges), and wants every score's bits to be the
// emulated sum's (one float32 accumulator over the pairs in ascending
// order, as VDPBF16PS adds them) and bf16Tiles' without the prefetch.
func TestBF16ScoreTilesNextMatchesEmulation(t *testing.T) {
	needBF16(t)
	defer func(v bool, n int) { bf16AttnKeyNext, bf16KeyNextMinBlocks = v, n }(bf16AttnKeyNext, bf16KeyNextMinBlocks)
	bf16KeyNextMinBlocks = 1
	rng := rand.New(rand.NewPCG(31, 41))
	rnd := func(n int) []uint16 {
		xs := make([]uint16, n)
		for i := range xs {
			xs[i] = roundBF16(float32(rng.NormFloat64()))
		}
		return xs
	}
	for _, kp := range []int{64, 128} {
		for _, m := range []int{1, 2, 3, 4, 5, 9} {
			for _, nb := range []int{1, 5, 6, 7, 12, 13, 19} {
				ws, ldo := 16*kp, 16*nb+3
				x, w := rnd(m*kp), rnd(nb*ws+64)
				run := func(next bool) []float32 {
					out := make([]float32, m*ldo)
					bf16AttnKeyNext = next
					withAMX(false, func() { bf16ScoreTiles(x, kp, m, w, ws, kp, nb, out, ldo) })
					return out
				}
				got, plain := run(true), run(false)
				for r := range m {
					for col := range 16 * nb {
						j, c := col/16, col%16
						var acc float32
						for p := 0; p < kp/2; p++ {
							k0 := w[j*ws+32*p+2*c]
							k1 := w[j*ws+32*p+2*c+1]
							acc += bf16(x[r*kp+2*p+1]) * bf16(k1) // exact products
							acc += bf16(x[r*kp+2*p]) * bf16(k0)
						}
						g := got[r*ldo+col]
						if g != acc || g != plain[r*ldo+col] {
							t.Fatalf("kp %d, %d rows, %d blocks: score[%d][%d] = %g (%#x), emulated %g (%#x), without the prefetch %g",
								kp, m, nb, r, col, g, math.Float32bits(g), acc, math.Float32bits(acc), plain[r*ldo+col])
						}
					}
				}
			}
		}
	}
}

// TestBF16AttentionKeyNextSameBits runs the bf16 path's attention of
// tiny models' layers (prefill, and decode by pieces) with the scores
// prefetching the next call's keys from one block on (bf16AttnKeyNext)
// and without, and wants the same bits.
func TestBF16AttentionKeyNextSameBits(t *testing.T) {
	needBF16(t)
	defer func(v bool, n int) { bf16AttnKeyNext, bf16KeyNextMinBlocks = v, n }(bf16AttnKeyNext, bf16KeyNextMinBlocks)
	bf16KeyNextMinBlocks = 1
	for _, name := range []string{"tinker-local/tiny-qwen3", "tinker-local/tiny-gpt-oss"} {
		_, bf := loadBF16Pair(t, name)
		a := newAttnCase(bf, 0, 230, 3)
		var outs [2][][][]float32
		for i, next := range []bool{false, true} {
			bf16AttnKeyNext = next
			withAMX(false, func() { outs[i] = [][][]float32{a.run(0, 230), a.pieces(57)} })
		}
		for k := range outs[0] {
			for p := range outs[0][k] {
				if !slices.Equal(outs[0][k][p], outs[1][k][p]) {
					t.Fatalf("%s: position %d (%s) differs with the next-block prefetch", name, p, []string{"prefill", "decode"}[k])
				}
			}
		}
	}
}
