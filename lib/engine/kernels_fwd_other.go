//go:build !amd64

package engine

// Off amd64 the forward product runs the scalar reference (kernels.go).
const (
	fwdAsm  = false
	fwdAVX2 = false
)

func matRowsAsm(mat, [][]float32, [][]float32, int, int, bool) bool { return false }

type fwdPack struct{}

func packForward(mat, [][]float32) (fwdPack, bool)                 { return fwdPack{}, false }
func (fwdPack) release()                                           {}
func (fwdPack) rows(mat, [][]float32, [][]float32, int, int, bool) {}
func (fwdPack) tokenSlices(_, _ int) int                           { return 1 }
func (fwdPack) lanePlanesFor(mat, int, int)                        {}
func (p fwdPack) tokens(int, int) fwdPack                          { return p }
func (fwdPack) rowAlign(int, int, int) int                         { return 6 }

func matMulFoldAsm(mat, [][]float32, [][]float32, mat, [][]float32, bool) bool { return false }

func sliceOf(m, _, _ int) (int, int) { return 0, m }

func matMulFoldOn(fwdPack, mat, [][]float32, [][]float32, mat, [][]float32, bool) {}
