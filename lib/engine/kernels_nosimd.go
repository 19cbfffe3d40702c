//go:build !(goexperiment.simd && amd64)

package engine

// Without GOEXPERIMENT=simd (or off amd64) every kernel runs the scalar
// code in kernels.go and kernels_train.go; these report that they did
// nothing.

const simdOK = false

func matTBlockVec(mat, [][]float32, [][]float32, int, int, int, int) bool { return false }

func outerRowsVec([]float32, int, [][]float32, [][]float32, int, int) bool { return false }

func axpyVec([]float32, float32, []float32, bool) bool { return false }
func addVec([]float32, []float32) int                  { return 0 }

func dot1Vec([]float32, []float32) (float32, bool) { return 0, false }
