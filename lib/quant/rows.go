package quant

import (
	"encoding/binary"
	"math"
)

// FP8Rows dequantises rows [lo, lo+n) of a cols-wide FP8 matrix: codes
// holds those rows, scales the whole matrix's F32 block scales (little
// endian, [ceil(rows/b0), ceil(cols/b1)]), dst n·cols values.
func FP8Rows(codes, scales []byte, cols int, b [2]int, lo, n int, dst []float32) {
	nbc := ceilDiv(cols, b[1])
	s := make([]float32, nbc)
	for r := range n {
		srow := ((lo + r) / b[0]) * nbc
		for c := range s {
			s[c] = math.Float32frombits(binary.LittleEndian.Uint32(scales[4*(srow+c):]))
		}
		fp8DecodeRow(dst[r*cols:(r+1)*cols], codes[r*cols:(r+1)*cols], b[1], s)
	}
}

// FP8Quantize quantises rows [lo, lo+n) (lo a multiple of the block
// height) into dst, their block scales into fresh: each block's scale is
// its largest magnitude over 448, each value value/scale rounded to E4M3.
func FP8Quantize(v []float32, cols int, b [2]int, lo, n int, dst, fresh []byte) {
	nbc := ceilDiv(cols, b[1])
	amax, inv := make([]uint32, nbc), make([]float32, nbc)
	for r0 := 0; r0 < n; r0 += b[0] {
		r1 := min(n, r0+b[0])
		clear(amax)
		for r := r0; r < r1; r++ {
			absMaxRow(v[r*cols:(r+1)*cols], b[1], amax)
		}
		for c, m := range amax {
			s := fp8Scale(m)
			binary.LittleEndian.PutUint32(fresh[4*(((lo+r0)/b[0])*nbc+c):], math.Float32bits(s))
			inv[c] = 1 / s
		}
		for r := r0; r < r1; r++ {
			fp8EncodeRow(dst[r*cols:(r+1)*cols], v[r*cols:(r+1)*cols], b[1], inv)
		}
	}
}

// fp8Scale is a block's scale from its largest magnitude's bits: that
// magnitude over 448, or 1 for a block of zeros.
func fp8Scale(amax uint32) float32 {
	s := math.Float32frombits(amax) / FP8Max
	if s == 0 {
		s = 1
	}
	return s
}

// FP8DecodeTile sets dst[i·ldd+j] to the value of code src[i·lds+j] times
// s, for i < rows and j < cols: all or part of one scale block, so that a
// block can be dequantised, updated and requantised while it is in cache.
// The values are FP8Rows' bit for bit.
func FP8DecodeTile(dst []float32, ldd int, src []byte, lds, rows, cols int, s float32) {
	if fp8DecodeTileVector(dst, ldd, src, lds, rows, cols, s) {
		return
	}
	sc := [1]float32{s}
	for i := range rows {
		fp8DecodeRow(dst[i*ldd:i*ldd+cols], src[i*lds:i*lds+cols], cols, sc[:])
	}
}

// FP8AbsMax is the largest magnitude of a rows × cols tile of src (row
// stride lds) as float32 bits: bits compare as the magnitudes do, and a
// NaN's compare above them all.
func FP8AbsMax(src []float32, lds, rows, cols int) uint32 {
	if m, ok := absMaxTileVector(src, lds, rows, cols); ok {
		return m
	}
	var amax [1]uint32
	for i := range rows {
		absMaxRow(src[i*lds:i*lds+cols], cols, amax[:])
	}
	return amax[0]
}

// FP8EncodeTile requantises one whole scale block (rows × cols of src, row
// stride lds) into dst (row stride ldd) and returns its new scale, as
// FP8Quantize does for each block of a row band, bit for bit.
func FP8EncodeTile(dst []byte, ldd int, src []float32, lds, rows, cols int) float32 {
	return FP8EncodeTileMax(dst, ldd, src, lds, rows, cols, FP8AbsMax(src, lds, rows, cols))
}

// FP8EncodeTileMax is FP8EncodeTile for a block whose largest magnitude
// (FP8AbsMax's bits) is known already.
func FP8EncodeTileMax(dst []byte, ldd int, src []float32, lds, rows, cols int, amax uint32) float32 {
	s := fp8Scale(amax)
	inv := [1]float32{1 / s}
	if fp8EncodeTileVector(dst, ldd, src, lds, rows, cols, inv[0]) {
		return s
	}
	for i := range rows {
		fp8EncodeRow(dst[i*ldd:i*ldd+cols], src[i*lds:i*lds+cols], cols, inv[:])
	}
	return s
}

// Int4Rows dequantises rows [lo, lo+n) of a cols-wide INT4 matrix: packed
// holds those rows, scales the whole matrix's BF16 group scales.
func Int4Rows(packed, scales []byte, cols, group, lo, n int, dst []float32) {
	sr := 2 * cols / group
	for r := range n {
		Int4Row(packed[r*cols/2:], scales[(lo+r)*sr:], group, dst[r*cols:(r+1)*cols])
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
