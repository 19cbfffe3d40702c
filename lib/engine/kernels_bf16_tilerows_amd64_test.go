package engine

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAMXTilesStoreOnlyTheirTokens: a block of m < 16 tokens (decoding's
// one) runs tiles of m rows (amxTileCfgs), so the sums past its m rows are
// never stored, and each of its rows has the bits of 16-row tiles.
func TestAMXTilesStoreOnlyTheirTokens(t *testing.T) {
	needAMX(t)
	rng := rand.New(rand.NewPCG(11, 12))
	for _, sh := range []struct{ rows, cols int }{{48, 64}, {32, 1024}, {16, 96}} {
		w := randBF16Mat(rng, sh.rows, sh.cols)
		kp, ldx, nb := bf16Cols(sh.cols), bf16Pitch(sh.cols), sh.rows/16
		var pp []uint16
		xb := packBF16Rows(randVecs(rng, 16, sh.cols), sh.cols, &pp)
		full := make([]float32, 16*16*nb)
		bf16Tiles(xb, ldx, 16, w.vn, 16*kp, kp, nb, full, 16*nb)
		for _, m := range []int{1, 2, 5, 15} {
			// The first m tokens, the rest of the block zero as packBF16Rows leaves it.
			xm := append([]uint16(nil), xb...)
			clear(xm[m*ldx:])
			out := make([]float32, len(full))
			for i := range out {
				out[i] = float32(math.NaN())
			}
			bf16Tiles(xm, ldx, m, w.vn, 16*kp, kp, nb, out, 16*nb)
			for i, v := range out {
				if r := i / (16 * nb); r < m && v != full[i] {
					t.Fatalf("%v, m=%d: token %d sum %d is %g, 16-row tiles give %g", sh, m, r, i%(16*nb), v, full[i])
				} else if r >= m && !math.IsNaN(float64(v)) {
					t.Fatalf("%v, m=%d: padding token %d's sum %d stored (%g)", sh, m, r, i%(16*nb), v)
				}
			}
		}
	}
}

// TestAMXTileCfgsLiteral checks the literal table against its rule: palette
// 1, eight tiles of 64-byte rows, tiles 0-5 m rows and 6-7 16 rows, the
// rest zero.
func TestAMXTileCfgsLiteral(t *testing.T) {
	for m := 1; m <= 16; m++ {
		var want [64]byte
		want[0] = 1
		for tile := range 8 {
			want[16+2*tile] = 64
			want[48+tile] = 16
			if tile < 6 {
				want[48+tile] = byte(m)
			}
		}
		if amxTileCfgs[m-1] != want {
			t.Errorf("amxTileCfgs[%d] = %v, want %v", m-1, amxTileCfgs[m-1], want)
		}
	}
}
