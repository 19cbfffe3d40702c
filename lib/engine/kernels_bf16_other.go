//go:build !amd64

package engine

// Off amd64 there is no bf16 path (LoadOptions.BF16Compute is refused).
func bf16Compute() bool { return false }

func matMulBF16Split(w mat, xs, ys [][]float32, accumulate bool) {
	panic("engine: bf16 path without AVX512-BF16")
}

func matMulBF16Group(ws []mat, xs [][]float32, ys [][][]float32, accumulate bool) {
	panic("engine: bf16 path without AVX512-BF16")
}

func matMulBF16(w mat, xs, ys [][]float32, lo, hi int, accumulate bool) {
	panic("engine: bf16 path without AVX512-BF16")
}

func matMulTBF16(w mat, ys, xs [][]float32, accumulate bool) {
	panic("engine: bf16 path without AVX512-BF16")
}

func (m *Model) attentionBF16(ws *workspace, rows []row, layer int) bool { return false }

func (m *Model) bf16Attention(layer int) bool { return false }

func packBF16Rows(xs [][]float32, n int, pp *[]uint16) []uint16 {
	panic("engine: bf16 path without AVX512-BF16")
}

func bf16Rows(w mat, xb []uint16, m int, ys [][]float32, lo, hi int, accumulate bool) {
	panic("engine: bf16 path without AVX512-BF16")
}

func (m *Model) bf16AttnPrep(rows []row, l0, l1 int) {}

func (m *Model) attendBF16Head(ws *workspace, rows []row, layer, kvh int) {
	panic("engine: bf16 path without AVX512-BF16")
}

func bf16AttnDone(rows []row, layer int) {}
