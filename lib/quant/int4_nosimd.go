//go:build !(goexperiment.simd && amd64)

package quant

// int4RoundVector: no vector unit here; int4Round's loop does it all.
func int4RoundVector(q []int32, src []float32, s float32) int { return 0 }
