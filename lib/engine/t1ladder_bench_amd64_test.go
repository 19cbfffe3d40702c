//go:build goexperiment.simd && amd64 && linux

package engine

import (
	"math"
	"testing"
	"unsafe"
)

// BenchmarkT1Ladder is BenchmarkReadLadder for the --bf16-compute decode's
// one-token products: the rungs from the read probe to the real call path
// over the packed (VNNI) copies of the 0.6B layers' products (16 layers,
// 480 MB in huge pages), each layer's products cut as the fused fork cuts
// them (decodeCut, 16-row alignment, per phase: q/k/v, o, gate/up, down):
//
//	probe    readS4T1 over the piece's bytes as four quarter-streams, 4
//	         lines of each a step, prefetched 1 KiB ahead into L2
//	probe2   the same again (the pairing's control)
//	probeBlk readS4T1 over four VNNI blocks at a time (the kernel's
//	         streams: a block a stream, a call every four blocks)
//	kern     avxBF16T1N6 (edges N1-N5) called directly a six blocks at a
//	         time, sums straight into y
//	kernX    avxBF16T1N6X (each line six blocks on prefetched, the next
//	         call's; no prefetch within a block), edges as kern
//	group    bf16GroupAVX over the piece (the kernel's Go loop)
//	rows     bf16Rows (the chunk loop, the pooled sums: the call the
//	         fused fork's pieces make)
//
// T1LADDER_ROUNDS (default 51), LADDER_THREADS ("2,1"), LADDER_RUNGS,
// LADDER_FORKS as BenchmarkReadLadder. Run with -benchtime 1x.
func BenchmarkT1Ladder(b *testing.B) {
	if !bf16Compute() || bf16UseAMX() {
		b.Skip("the one-token AVX512-BF16 kernels: this CPU runs AMX")
	}
	shapes := [][2]int{{2048, 1024}, {1024, 1024}, {1024, 1024}, {1024, 2048}, {3072, 1024}, {3072, 1024}, {1024, 3072}}
	forks := [][2]int{{0, 3}, {3, 4}, {4, 6}, {6, 7}}
	r := newRNG(3)
	// x packed once a width, as the fork's phases pack it
	xbs := map[int][]uint16{}
	for _, c := range []int{1024, 2048, 3072} {
		x := make([]float32, c)
		fill(x, r, 1)
		var pp []uint16
		xbs[c] = packBF16Rows([][]float32{x}, c, &pp)
	}
	y := make([]float32, 3072)
	ys := [][]float32{y}
	var sink8 [8]uint64
	// kernLoop runs the one-token kernels over blocks [b, b+nb) of m, six
	// at a time (ks[6]), the edge's kernel last, sums to y from row 16b.
	kernLoop := func(m mat, lo, hi int, six func(x *uint16, ldx int, w *uint16, wstride int, kp int, out *float32, ldo int)) {
		kp := bf16Cols(m.cols)
		ws := 16 * kp
		xb := xbs[m.cols]
		for j := lo / 16; j < hi/16; j += 6 {
			nn := min(6, hi/16-j)
			k := avxBF16T1Variants[0][nn]
			if nn == 6 {
				k = six
			}
			k(&xb[0], 2*bf16Pitch(m.cols), &m.vn[j*ws], 2*ws, kp/2, &y[16*j], 4*3072)
		}
	}
	rungs := []ladderRung{
		{"probe", func(m mat, lo, hi int) {
			q := (hi - lo) / 4 * bf16Cols(m.cols) * 2
			readS4T1((*uint64)(unsafe.Pointer(&m.vn[lo*bf16Cols(m.cols)])), q, q/256, 1024, &sink8)
		}},
		{"probe2", func(m mat, lo, hi int) {
			q := (hi - lo) / 4 * bf16Cols(m.cols) * 2
			readS4T1((*uint64)(unsafe.Pointer(&m.vn[lo*bf16Cols(m.cols)])), q, q/256, 1024, &sink8)
		}},
		{"probeBlk", func(m mat, lo, hi int) {
			kp := bf16Cols(m.cols)
			bb := 32 * kp // a block's bytes
			j := lo / 16
			for ; j+4 <= hi/16; j += 4 {
				readS4T1((*uint64)(unsafe.Pointer(&m.vn[j*16*kp])), bb, bb/256, 1024, &sink8)
			}
			for ; j < hi/16; j++ {
				readS1T1((*uint64)(unsafe.Pointer(&m.vn[j*16*kp])), bb, bb/256, 1024, &sink8)
			}
		}},
		{"kern", func(m mat, lo, hi int) { kernLoop(m, lo, hi, avxBF16T1N6) }},
		{"kernX", func(m mat, lo, hi int) { kernLoop(m, lo, hi, avxBF16T1N6X) }},
		{"group", func(m mat, lo, hi int) {
			kp := bf16Cols(m.cols)
			bf16GroupAVX(xbs[m.cols], bf16Pitch(m.cols), 1, m.vn[lo*kp:], 16*kp, kp, (hi-lo)/16, &y[lo], 3072)
		}},
		{"rows", func(m mat, lo, hi int) { bf16Rows(m, xbs[m.cols], 1, ys, lo, hi, false) }},
	}
	runLadder(b, "t1ladder", rungs, shapes, forks, envInt("T1LADDER_ROUNDS", 51), func(sh [2]int, slab *hugeSlab) mat {
		vn := hugeSlabAlloc[uint16](slab, sh[0]*bf16Cols(sh[1]))
		for i := range vn {
			vn[i] = uint16(math.Float32bits(float32(2*r.float64()-1)) >> 16)
		}
		return mat{rows: sh[0], cols: sh[1], vn: vn}
	}, func(g []mat) []rowPiece { return decodeCut(nil, g, 16, 2) }, func(m mat) int { return 2 * m.rows * bf16Cols(m.cols) })
}
