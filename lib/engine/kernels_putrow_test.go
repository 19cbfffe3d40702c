//go:build goexperiment.simd && amd64

package engine

import (
	"math"
	"testing"
)

// putRow's accumulating path adds in vector lanes (addVec) with the bits
// of the plain element-by-element add, on the 512- and 256-bit paths,
// for every length around the lane widths, with infinities, NaN, signed
// zeros and subnormals among the values; and the lanes do take the
// leading multiple of 8.
func TestPutRowAddsLikeScalar(t *testing.T) {
	defer func(old bool) { avx512 = old }(avx512)
	special := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), float32(math.Copysign(0, -1)), 0, 1e-40, -3e38, 3e38}
	for _, wide := range []bool{avx512, false} {
		avx512 = wide
		for n := range 50 {
			y, v := randRows(1, n+1, uint64(n))[0][:n], randRows(1, n+1, uint64(n+100))[0][:n]
			for i := range y {
				if i%5 == 0 {
					y[i], v[i] = special[i%len(special)], special[(i/5)%len(special)]
				}
			}
			want := make([]float32, n)
			for i := range want {
				want[i] = y[i] + v[i]
			}
			if did := addVec(append([]float32(nil), y...), v); n >= 8 && did != n&^7 {
				t.Fatalf("n=%d: addVec did %d elements", n, did)
			}
			putRow(y, v, true)
			if !bitsEqual(y, want) {
				t.Fatalf("n=%d avx512=%v: putRow's sum differs from the plain add at %s", n, wide, firstDiff(y, want))
			}
		}
	}
}
