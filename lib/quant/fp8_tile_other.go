//go:build !amd64

package quant

// Off amd64 the row loops (fp8.go) do whole tiles too.

func fp8EncodeTileVector(dst []byte, ldd int, src []float32, lds, rows, cols int, inv float32) bool {
	return false
}

func fp8DecodeTileVector(dst []float32, ldd int, src []byte, lds, rows, cols int, s float32) bool {
	return false
}

func absMaxTileVector(src []float32, lds, rows, cols int) (uint32, bool) { return 0, false }
