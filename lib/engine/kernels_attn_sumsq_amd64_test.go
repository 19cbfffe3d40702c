//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"testing"
)

// TestTileWQRMatchesTileWP checks attnTileWQ and attnTileWR (the weighted
// sums prefetching each value line two and three times) against
// attnTileWP bit for bit, accumulating into nonzero C, over key counts
// around their prefetch distances, and attendHeadsBlocked with loneSumsQ
// and loneSumsR on and off.
func TestTileWQRMatchesTileWP(t *testing.T) {
	if !avx512 || !useSIMD || !simdOK {
		t.Skip("no AVX-512")
	}
	const hd, kvd = 128, 1024
	for _, n := range []int{1, 3, 4, 5, 8, 9, 15, 16, 17, 40, 300} {
		for r := 1; r <= len(attnTileWP); r++ {
			ld := (n + 3) &^ 3
			a := flat(randRows(r, ld, uint64(n)))
			b := flat(randRows(n, kvd, uint64(n+1)))
			want := flat(randRows(r, hd, uint64(n+2)))
			q, rr := append([]float32(nil), want...), append([]float32(nil), want...)
			attnTileWP[r-1](&want[0], 4*hd, &a[0], uintptr(4*ld), 4, &b[256], 4*kvd, n)
			attnTileWQ[r-1](&q[0], 4*hd, &a[0], uintptr(4*ld), 4, &b[256], 4*kvd, n)
			attnTileWR[r-1](&rr[0], 4*hd, &a[0], uintptr(4*ld), 4, &b[256], 4*kvd, n)
			fuseSameBits(t, fmt.Sprintf("WQ n=%d r=%d", n, r), want, q)
			fuseSameBits(t, fmt.Sprintf("WR n=%d r=%d", n, r), want, rr)
		}
	}
	defer func(q, r bool) { loneSumsQ, loneSumsR = q, r }(loneSumsQ, loneSumsR)
	const kvh = 8
	for group := 1; group <= 2; group++ {
		q := flat(randRows(kvh*group, hd, uint64(group)))
		for _, npos := range []int{1, 17, 100, 263} {
			keys, vals := flat(randRows(npos, kvd, uint64(npos)+10)), flat(randRows(npos, kvd, uint64(npos)+20))
			run := func(sq, sr bool) []float32 {
				loneSumsQ, loneSumsR = sq, sr
				var buf []float32
				out := flat(randRows(kvh*group, hd, 99))
				if !attendHeadsBlocked(&buf, q, out, keys, vals, kvd, hd, group, npos, 0, kvh, 0.088, nil) {
					t.Fatal("attendHeadsBlocked did not run")
				}
				return out
			}
			want := run(false, false)
			name := fmt.Sprintf("group=%d npos=%d", group, npos)
			fuseSameBits(t, name+" WQ", want, run(true, false))
			fuseSameBits(t, name+" WR", want, run(true, true))
		}
	}
}
