//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"testing"
)

// BenchmarkGEMMLanesAVX2Ladder runs the 4×3 lane tile alone on one core,
// the same packed group and panel every call, in GFLOP per CPU-second and
// as a share of the 256-bit FMA loop: its ceiling with the panel in L1
// (kp chunks small) or L2.
func BenchmarkGEMMLanesAVX2Ladder(b *testing.B) {
	_, peak := bestPeak(true)
	for _, kp := range []int{4, 16, 64, 192} {
		for _, piece := range []int{16, 64, 192} {
			n := 16 * kp
			_, _, xs := fwdCase(1, n, 4, 5)
			p := newFwdPack(xs, n, false)
			panel := make([]float32, 16*kp*24+8)
			for i := range panel {
				panel[i] = float32(i%7) / 7
			}
			scratch := make([]float32, 16*96+8)
			out := make([]float32, 96)
			flop := 2 * float64(4*24*n)
			b.Run(fmt.Sprintf("kp=%d/piece=%d", kp, piece), func(b *testing.B) {
				c0 := processCPU()
				for b.Loop() {
					fwdLanes4x3(&p.xp[0], &panel[0], kp, piece, &out[0], &scratch[0], fwdLanesTree, &p.xp[0], nil, nil)
				}
				rate := flop * float64(b.N) / (processCPU() - c0) / 1e9
				b.ReportMetric(rate, "GFLOP/cpu-s")
				b.ReportMetric(100*rate/peak, "%fma-cpu")
			})
			p.release()
		}
	}
}
