//go:build !amd64

package engine

// Other architectures have no assembly tiles: the backward products run
// the archsimd or scalar kernels.

var bwdAsm, bwdAVX2 = false, false

func matMulTAsm([]tTerm, [][]float32) bool { return false }

func matMulTAVX2([]tTerm, [][]float32) bool { return false }

func outerAVX2([]float32, int, int, [][]float32, [][]float32) bool { return false }

func outer2Shared([][]float32, int, int, [][][]float32, [][]float32) bool { return false }

func outerAsm([]float32, int, int, [][]float32, [][]float32) bool { return false }

func outerAsmShared([][]float32, int, int, [][][]float32, [][]float32) bool { return false }
