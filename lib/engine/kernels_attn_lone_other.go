//go:build !(goexperiment.simd && amd64)

package engine

func attendKVHeadAsm(*[]float32, []float32, []float32, []float32, []float32, int, int, int, int, int, float32, []float32) bool {
	return false
}

func attendHeadsBlocked(*[]float32, []float32, []float32, []float32, []float32, int, int, int, int, int, int, float32, []float32) bool {
	return false
}
