//go:build goexperiment.simd && amd64

package engine

import (
	"math"
	"slices"
	"testing"
)

// TestExp4ChainsAVX2SameBits requires the 4-lane exponential loops with
// four chains and the fused keep (exp4Chains), and with them the
// generated eight-chain kernels (expAVX2), to give the bits of the
// two-chain loops and of expScaled then sumLanes: every exponential, the
// sums of expScaledSum and expScaledKeep, on the 4-lane path (AVX-512
// off) and this CPU's, over every tail length around the loops' 16 and 32
// and a vocabulary's row, with values beyond exp64's range and NaN and
// without (whose sums are finite).
func TestExp4ChainsAVX2SameBits(t *testing.T) {
	if !simdOK {
		t.Fatal("built with GOEXPERIMENT=simd but the CPU has no AVX2: the vector kernels cannot be checked here")
	}
	defer func(c, a bool) { exp4Chains, expAVX2 = c, a }(exp4Chains, expAVX2)
	lengths := slices.Clone(elemLengths)
	for n := 24; n <= 72; n++ {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, 1000, 151936)
	for _, wide := range []bool{false, avx512} {
		withAVX512(wide, func() {
			for _, n := range lengths {
				// Values beyond exp64's range make the sums infinite: the
				// moderate row checks the sums' order.
				ext := spread(n, 50, uint64(n), true)
				if n >= 2 {
					// exp64's range ends (x = ±708/709 at T = 1): compared
					// strictly, so kept.
					ext[n/3], ext[2*n/3] = -706.5, 710.5
				}
				for _, in := range [][]float32{ext, spread(n, 8, uint64(n)+1, false)} {
					for _, temp := range []float64{1, 0.7} {
						run := func(chains, asm bool) []float64 {
							exp4Chains, expAVX2 = chains, asm
							e, k := make([]float64, n), make([]float64, n)
							expScaled(e, in, 1/temp, 1.5)
							sum := expScaledKeep(k, in, 1/temp, 1.5)
							return append(append(e, k...), expScaledSum(in, 1/temp, 1.5), sum)
						}
						want := run(false, false)
						for _, asm := range []bool{false, true} {
							got := run(true, asm)
							for i := range want {
								if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
									t.Fatalf("AVX-512 %v, n %d, T %v, assembly %v: value %d of %d (exponentials, kept exponentials, the sum, the kept sum) %v with four or eight chains, %v with two",
										wide, n, temp, asm, i, len(want), got[i], want[i])
								}
							}
						}
					}
				}
			}
		})
	}
}
