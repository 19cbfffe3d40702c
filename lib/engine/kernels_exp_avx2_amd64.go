package engine

import (
	"math"
	"sync"
)

//go:generate go run ./internal/asmgen/elemavx2

// expAVX2 selects the generated AVX2 exponential loops
// (kernels_exp_avx2_amd64.s, from internal/asmgen/elemavx2) for the 4-lane
// paths of expScaled, expScaledSum and expScaledKeep (GOEXPERIMENT=simd
// builds, which have those paths): eight chains of four lanes a pass
// instead of the compiled archsimd loops' four, the same operations per
// lane, so the same bits. The 151936-word log-sum-exp took 1.20x less CPU
// than exp4Chains' loops alone on the Zen 3 VM (BenchmarkExp4Chains), and
// the loss's share of a wide4 2×512 step's profile fell from 3.4% to 2.0%
// with both.
//
// A plain switch, not a CPU check: the 4-lane paths that call the kernels
// run only where expVec holds (AVX2 and FMA), and a check here would be
// code run at init.
var expAVX2 = true

// expTab4 holds the constants of exp64 that the AVX2 kernels read, each
// row four copies for a YMM operand, in the rows the generator names
// (tabLog2e...tabZero): log2e, the rounding constant, −ln2 in two parts,
// expPoly's 14 coefficients, the exponent bias 1023 (as integer bits),
// expHi, expLo, +Inf and 0. It is filled on first use (expTabReady), not
// at start: code run at init costs every tinker command its start-up
// (cmd/tinker/app's TestOwnInitCodeStaysSmall).
var expTab4 [23][4]float64

var expTabOnce sync.Once

// expTabReady fills expTab4 once; every caller of the generated kernels
// calls it first.
func expTabReady() {
	expTabOnce.Do(func() {
		rows := []float64{expLog2e, expRound, -expLn2Hi, -expLn2Lo}
		rows = append(rows, expPoly[:]...)
		rows = append(rows, math.Float64frombits(1023), expHi, expLo, math.Inf(1), 0)
		for i, v := range rows {
			expTab4[i] = [4]float64{v, v, v, v}
		}
	})
}
