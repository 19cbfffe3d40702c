package engine

// rowLongVariant selects fwdRowsLong's kernels among the generated
// arrangements (rowLongVariants in asmgen/fwd; 0 the product's: four
// streams, each stream's line 1 KiB ahead prefetched into L2, unpaced), a
// variable so the paired benchmarks can switch it token by token.
var rowLongVariant = 0

// rowLongStreams is how many sub-ranges of a piece a long-stream kernel
// reads at once: 16/rowLongStreams consecutive rows of each a call.
const rowLongStreams = 4

// rowLongKernels are the generated long-stream arrangements
// (rowLongVariants in asmgen/fwd) that rowLongVariant indexes, each as
// its name and its bfloat16 and float32 kernels; the paired benchmarks
// and TestRowLongMatchesDotLanes run them all.
var rowLongKernels = [...]struct {
	name string
	bf16 func(x *float32, w *uint16, stride, n, span int, out *[16]float32)
	f32  func(x *float32, w *float32, stride, n, span int, out *[16]float32)
}{
	{"A1K", fwdRowLongBF16, fwdRowLongF32},
	{"A1KP", fwdRowLongA1KPBF16, fwdRowLongA1KPF32},
	{"A0", fwdRowLongA0BF16, fwdRowLongA0F32},
}

// rowLongVariantIndex is the rowLongVariant of the arrangement named
// name, or -1.
func rowLongVariantIndex(name string) int {
	for i, k := range rowLongKernels {
		if k.name == name {
			return i
		}
	}
	return -1
}

func rowLongBF16(x *float32, w *uint16, stride, n, span int, out *[16]float32) {
	rowLongKernels[rowLongVariant].bf16(x, w, stride, n, span, out)
}

func rowLongF32(x *float32, w *float32, stride, n, span int, out *[16]float32) {
	rowLongKernels[rowLongVariant].f32(x, w, stride, n, span, out)
}

// rowsLongOne selects one fwdRowsLong<F32|BF16> call for a piece's rows
// (rowsLongCall) instead of a fwdRowLong call and four putRow copies per
// four rows of each stream: the same bits, and decode's bfloat16 tokens
// 1.01-1.08x as fast token-paired (BenchmarkDecodeRowsOneTokens;
// docs/engine-decoding.md, "The read ladder"). A variable so the paired
// benchmarks can switch it token by token; rowLongVariant's other
// arrangements still go a call per four rows.
var rowsLongOne = true

// rowsLongT0 selects fwdRowsLongT0<F32|BF16> for rowsLongCall: each
// stream's line 256 bytes ahead also prefetched into L1. A variable so the
// paired benchmarks can switch it token by token.
var rowsLongT0 = false

// rowsLongCall computes the 4·q rows from lo of w (q a multiple of 4) for
// x into y, as four streams of q rows (fwdRowsLong's quarters), stored,
// or added where accumulate.
func rowsLongCall(w mat, x, y []float32, lo, q int, accumulate bool) {
	x = x[:w.cols]
	_ = y[lo+4*q-1]
	acc := 0
	if accumulate {
		acc = 1
	}
	if w.bf != nil {
		_ = w.bf[(lo+4*q)*w.cols-1]
		k := fwdRowsLongBF16
		if rowsLongT0 {
			k = fwdRowsLongT0BF16
		}
		k(&x[0], &w.bf[lo*w.cols], w.cols, w.cols, q*w.cols, q, &y[lo], q, acc)
		return
	}
	_ = w.data[(lo+4*q)*w.cols-1]
	k := fwdRowsLongF32
	if rowsLongT0 {
		k = fwdRowsLongT0F32
	}
	k(&x[0], &w.data[lo*w.cols], w.cols, w.cols, q*w.cols, q, &y[lo], q, acc)
}
