//go:build !(goexperiment.simd && amd64)

package engine

// Without GOEXPERIMENT=simd (or off amd64) the elementwise kernels run
// their scalar bodies in kernels_elem.go; these report that they did
// nothing.

func max32Vec([]float32) (float32, bool) { return 0, false }

func scaleVec([]float32, float32) bool { return false }

func expScaledVec([]float64, []float32, float64, float64) bool { return false }

func expScaledSumVec([]float32, float64, float64) (float64, bool) { return 0, false }

func sumLanesVec([]float64) (float64, bool) { return 0, false }

func expScaledKeepVec([]float64, []float32, float64, float64) (float64, bool) { return 0, false }

func scaleExpsVec([]float32, []float64, float64) bool { return false }

func siluMulVec(_, _, _ []float32) bool { return false }

func siluMulBackwardVec(_, _, _, _ []float32) bool { return false }

func sumSquaresVec([]float32) (float64, bool) { return 0, false }

func normSumsVec(_, _, _ []float32) (float64, float64, bool) { return 0, 0, false }

func normGradVec(_, _, _, _ []float32, _, _ float64) bool { return false }

func scaleMulVec([]float32, []float32, float32, []float32) bool { return false }

func widenBF16Vec([]float32, []uint16) bool { return false }

func ropeRotateVec(_, _, _, _ []float32, _ bool) bool { return false }

func adamUpdateVec(_, _, _, _ []float32, _ adamConsts) bool                 { return false }
func expScores32Vec([]float64, []float32, float32, float32) (float64, bool) { return 0, false }
