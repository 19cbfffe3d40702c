package engine

import "unsafe"

// rowLongVariant selects fwdRowsLong's kernel among the generated
// arrangements (rowLongVariants in asmgen/fwd; 0 the product's: four
// streams, each stream's line 1 KiB ahead prefetched into L2, unpaced), a
// variable so the paired benchmarks can switch it token by token.
var rowLongVariant = 0

// rowLongVariantNames are rowLongVariant's values' names, in order.
var rowLongVariantNames = []string{"A1K", "A1KP", "A0"}

func rowLongBF16(x *float32, w *uint16, stride, n, span int, out *[16]float32) {
	switch rowLongVariant {
	case 1:
		fwdRowLongA1KPBF16(x, w, stride, n, span, out)
	case 2:
		fwdRowLongA0BF16(x, w, stride, n, span, out)
	default:
		fwdRowLongBF16(x, w, stride, n, span, out)
	}
}

func rowLongF32(x *float32, w *float32, stride, n, span int, out *[16]float32) {
	switch rowLongVariant {
	case 1:
		fwdRowLongA1KPF32(x, w, stride, n, span, out)
	case 2:
		fwdRowLongA0F32(x, w, stride, n, span, out)
	default:
		fwdRowLongF32(x, w, stride, n, span, out)
	}
}

// rowLongWarmLines is how many lines of each stream rowLongWarmPiece
// prefetches before a piece's first call (0: none).
var rowLongWarmLines = 0

// rowLongWarmPiece prefetches the first rowLongWarmLines lines of each of
// the four streams of w's piece from row lo (span weights a stream).
func rowLongWarmPiece(w mat, lo, span int) {
	if rowLongWarmLines == 0 {
		return
	}
	if w.bf != nil {
		fwdRowLongWarm((*byte)(unsafe.Pointer(&w.bf[lo*w.cols])), 2*span, min(rowLongWarmLines, 2*span/64))
	} else {
		fwdRowLongWarm((*byte)(unsafe.Pointer(&w.data[lo*w.cols])), 4*span, min(rowLongWarmLines, 4*span/64))
	}
}
