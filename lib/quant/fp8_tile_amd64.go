package quant

import "github.com/tinkershell/tinker/lib/cpufeat"

// tileLanes selects the whole-tile kernels (fp8_tile_amd64.s); a function,
// not a package variable, so quant has no init code (see fp8Lanes).
func tileLanes() bool { return cpufeat.AVX512() }

//go:noescape
func fp8EncodeTileAVX512(dst *byte, ldd int, src *float32, lds, rows, cols int, inv float32)

//go:noescape
func fp8DecodeTileAVX512(dst *float32, ldd int, src *byte, lds, rows, cols int, s float32)

//go:noescape
func absMaxTileAVX512(src *float32, lds, rows, cols int) uint32

// tileVector says whether a rows × cols tile goes to the kernels.
func tileVector(rows, cols int) bool { return tileLanes() && rows > 0 && cols > 0 && cols%16 == 0 }

func fp8EncodeTileVector(dst []byte, ldd int, src []float32, lds, rows, cols int, inv float32) bool {
	if !tileVector(rows, cols) {
		return false
	}
	_, _ = dst[(rows-1)*ldd+cols-1], src[(rows-1)*lds+cols-1]
	fp8EncodeTileAVX512(&dst[0], ldd, &src[0], lds, rows, cols, inv)
	return true
}

func fp8DecodeTileVector(dst []float32, ldd int, src []byte, lds, rows, cols int, s float32) bool {
	if !tileVector(rows, cols) {
		return false
	}
	_, _ = dst[(rows-1)*ldd+cols-1], src[(rows-1)*lds+cols-1]
	fp8DecodeTileAVX512(&dst[0], ldd, &src[0], lds, rows, cols, s)
	return true
}

func absMaxTileVector(src []float32, lds, rows, cols int) (uint32, bool) {
	if !tileVector(rows, cols) {
		return 0, false
	}
	_ = src[(rows-1)*lds+cols-1]
	return absMaxTileAVX512(&src[0], lds, rows, cols), true
}
