//go:build !(goexperiment.simd && amd64)

package engine

// Without GOEXPERIMENT=simd the attention kernels run the loops in
// kernels_attn.go; these report that they did no element.

func attnDotsVec([]float32, []float32, []float32, int, int) int { return 0 }

func attnWeightedVec([]float32, []float32, []float32, int, int) int { return 0 }

func attnDotsPairVec([]float32, []float32, []float32, []float32, []float32, int, int) int { return 0 }

func attnDotsBlockVec([]float32, int, [][]float32, int, int, []float32, int, int, []float32) int {
	return 0
}

func packKeyTiles([]float32, []float32, int, int) {}

func keyTilesOK(int) bool { return false }

func keyRowsOK(int) bool { return false }

func attnWeightedBlockVec([][]float32, []float32, int, int, int, []float32, int, int) int { return 0 }

// packKeyTile is never called here: keyTilesOK is false.
func packKeyTile([]float32, []float32, int, int, int, int) {}

func softmaxRowsVec([][]float32, float32, []float32, int, int) bool { return false }
func max16Vec([]float32) (float32, bool)                            { return 0, false }
