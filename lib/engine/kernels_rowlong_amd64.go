package engine

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
