//go:build !(goexperiment.simd && amd64)

package engine

// Without GOEXPERIMENT=simd attnScatterBlock runs its loop alone.

func attnScatterBlockVec([][]float32, int, []float32, []float32, int, int, int) int { return 0 }
