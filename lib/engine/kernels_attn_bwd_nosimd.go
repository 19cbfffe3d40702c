//go:build !(goexperiment.simd && amd64)

package engine

// Without GOEXPERIMENT=simd the attention backward runs its loops alone.

func attnScatterBlockVec([][]float32, int, []float32, []float32, int, int, int) int { return 0 }

func mul64Vec([]float64, float64) int { return 0 }

func dsVec([]float32, []float64, []float32, float64, float64) int { return 0 }

func dot64LanesVec([]float64, []float32, *[8]float64) int { return 0 }

func softmaxGrad8([]float64, []float32, []float32, float32, float32) bool { return false }

func scatterColumnsOK(int) bool { return false }

func scatterColumns([][]float32, []float32, int, []float32, int, int, int) {}
