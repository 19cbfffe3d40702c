//go:build !amd64

package engine

// Off amd64 the forward product runs the scalar reference (kernels.go).
const fwdAsm = false

func matRowsAsm(mat, [][]float32, [][]float32, int, int, bool) bool { return false }
