//go:build goexperiment.simd && amd64

package engine

import (
	"math"
	"testing"
)

// BenchmarkSoftmaxExp times softmax's exponentials over 2048 scores
// (in place as the forward takes them, widened to float64 as the
// backward does) on the 16-lane kernels and the 8-lane ones, in CPU-ns
// an element.
func BenchmarkSoftmaxExp(b *testing.B) {
	x := randRows(1, 2048, 1)[0]
	for _, lanes := range []int{16, 8} {
		b.Run(map[int]string{16: "x16", 8: "x8"}[lanes], func(b *testing.B) {
			defer func(old bool) { avx512 = old }(avx512)
			avx512 = avx512 && lanes == 16
			y, z := make([]float32, len(x)), make([]float64, len(x))
			c0 := processCPU()
			for b.Loop() {
				copy(y, x)
				expScores32(nil, y, 1, 3)
				copy(y, x)
				expScores32(z, y, 0.125, 3)
			}
			b.ReportMetric((processCPU()-c0)*1e9/float64(2*b.N*len(x)), "cpu-ns/elem")
		})
	}
}

// TestAttentionScoreTilesMatchAttnDot: the transposed-key score tiles (attnDotsT,
// dotsBlock16) give attnDot's bits for every query and key they score,
// with the keys packed once (packKeyTiles) or per tile, the queries read
// in place (evenly spaced) or copied, and 1-7 queries (every remainder of
// the groups of three).
func TestAttentionScoreTilesMatchAttnDot(t *testing.T) {
	if !keyTilesOK(128) {
		t.Skip("no AVX-512 on this CPU")
	}
	for _, hd := range []int{8, 64, 136} {
		for nq := 1; nq <= 7; nq++ {
			for _, packed := range []bool{false, true} {
				for _, even := range []bool{false, true} {
					checkDotsTiles(t, hd, nq, packed, even)
				}
			}
		}
	}
}

func checkDotsTiles(t *testing.T, hd, nq int, packed, even bool) {
	t.Helper()
	const nk, stride = 3*dotsTile + 5, 300
	keys := randRows(1, nk*stride, uint64(hd))[0]
	heads := randRows(1, 2*nq*hd, uint64(nq))[0]
	qs := make([][]float32, nq)
	for j := range qs {
		step := hd
		if !even {
			step = 2 * hd // every other slot: not hd apart
		}
		qs[j] = heads[j*step : j*step+hd]
	}
	var tiles []float32
	if packed {
		contig := make([]float32, nk*hd)
		for k := range nk {
			copy(contig[k*hd:], keys[k*stride+7:][:hd])
		}
		tiles = make([]float32, nk*hd)
		packKeyTiles(tiles, contig, nk, hd)
	}
	ld := nk + 3
	sc := make([]float32, nq*ld)
	p0 := nk - nq // query j at position p0+j (group 1) sees keys 0..p0+j
	end := dotsBlock16(sc, ld, qs, 1, p0, keys, stride, 7, nk, tiles)
	if end != nk&^(dotsTile-1) {
		t.Fatalf("hd %d nq %d: did %d keys, want %d", hd, nq, end, nk&^(dotsTile-1))
	}
	for j, q := range qs {
		for k := range min(end, p0+j+1) {
			want := attnDot(keys[k*stride+7:][:hd], q)
			if got := sc[j*ld+k]; math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("hd %d nq %d packed %v even %v: score (%d,%d) = %g, attnDot %g", hd, nq, packed, even, j, k, got, want)
			}
		}
	}
}
