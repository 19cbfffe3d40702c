package engine

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/cpufeat"
)

// withBwdKernels runs fn with matMulT's AVX2 tiles (avx2) or the scalar
// reference, the AVX-512 tiles off either way, on procs goroutines.
func withBwdKernels(avx2 bool, procs int, fn func()) {
	defer func(a, b, s bool) { bwdAsm, bwdAVX2, useSIMD = a, b, s }(bwdAsm, bwdAVX2, useSIMD)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	bwdAsm, bwdAVX2, useSIMD = false, avx2, avx2 && simdOK
	fn()
}

// TestBackwardAVX2MatchesScalar requires the AVX2 tiles of matMulT,
// matMulTLoRA and outerAcc to give the scalar kernels' bits: columns with
// and without a tail (cols mod 8) and below and above one column block
// (tCols), batches that leave every tile height over, weights taller than
// kcWhole (blocks of kcAsm rows), writing and accumulating, 1 and 3
// goroutines, float32 and bfloat16 weights (widened into the panel), rows
// evenly spaced (the tiles run: checked) or not (the fallback).
func TestBackwardAVX2MatchesScalar(t *testing.T) {
	if !cpufeat.AVX2FMA() {
		t.Skip("the CPU has no AVX2 and FMA3")
	}
	r := newRNG(29)
	all := [][4]int{{300, 600, 5, 32}, {1000, 32, 9, 8}, {7, 3, 2, 3}, {129, 1000, 13, 32}, {64, 257, 130, 8},
		{33, 17, 1, 1}, {130, 80, 7, 4}, {40, 48, 12, 32}, {20, 300, 17, 5}, {3100, 300, 13, 32},
		{32, 300, 11, 2}, {4100, 24, 130, 32}, {200, 512, 64, 16}}
	few := [][4]int{{300, 600, 5, 32}, {64, 257, 130, 8}, {7, 3, 2, 3}, {1000, 32, 9, 8}}
	for _, sz := range qemuFew(all, few) {
		rows, cols, n, rank := sz[0], sz[1], sz[2], sz[3]
		w, _, _ := benchMat(rows, cols)
		wb := mat{rows: rows, cols: cols, bf: truncBF16(w.data)}
		a, _, _ := benchMat(rank, cols)
		for _, spaced := range []bool{true, false} {
			for _, w := range []mat{w, wb} {
				checkBackwardAVX2(t, fmt.Sprintf("%v bf16=%v spaced=%v", sz, w.bf != nil, spaced), w, a, r, n, spaced)
			}
			// Every narrow dst transposed too (outer2Transposed), not
			// only those over a us of 4 MiB.
			for _, tf := range []int{outer2TransposeFloats, 0} {
				func() {
					defer func(f int) { outer2TransposeFloats = f }(outer2TransposeFloats)
					outer2TransposeFloats = tf
					checkOuterAVX2(t, fmt.Sprintf("%v spaced=%v transpose-from=%d", sz, spaced, tf), r, rows, cols, n, spaced)
				}()
			}
		}
	}
}

// checkBackwardAVX2 is TestBackwardAVX2MatchesScalar on one shape: w and
// a over n rows, evenly spaced or not.
func checkBackwardAVX2(t *testing.T, name string, w, a mat, r *rng, n int, spaced bool) {
	t.Helper()
	rows, rank, cols := w.rows, a.rows, w.cols
	ys, ts, x0 := gapRows(r, n, rows, spaced), gapRows(r, n, rank, spaced), gapRows(r, n, cols, spaced)
	for _, acc := range []bool{false, true} {
		name := fmt.Sprintf("%s acc=%v", name, acc)
		want, wantL := cloneGapRows(x0), cloneGapRows(x0)
		withBwdKernels(false, 1, func() {
			matMulT(w, ys, want, acc)
			matMulT(w, ys, wantL, acc)
			matMulT(a, ts, wantL, true)
		})
		if spaced {
			got := cloneGapRows(x0)
			if !matMulTAVX2([]tTerm{{w: w, ys: ys, zero: !acc}}, got) {
				t.Fatalf("%s: the AVX2 tiles did not run", name)
			}
			requireSameRows(t, name+" matMulTAVX2", got, want)
		}
		for _, procs := range []int{1, 3} {
			got, gotL := cloneGapRows(x0), cloneGapRows(x0)
			withBwdKernels(true, procs, func() {
				matMulT(w, ys, got, acc)
				matMulTLoRA(w, ys, a, ts, gotL, acc)
			})
			requireSameRows(t, fmt.Sprintf("%s procs=%d matMulT", name, procs), got, want)
			requireSameRows(t, fmt.Sprintf("%s procs=%d matMulTLoRA", name, procs), gotL, wantL)
		}
	}
}

// checkOuterAVX2 requires outerAcc's AVX2 tiles (rows × cols over n
// batch rows, evenly spaced or not) to give the scalar kernels' bits. vs
// holds one row more than the batch, which outerAcc must leave out (the
// transposed path once took it in).
func checkOuterAVX2(t *testing.T, name string, r *rng, rows, cols, n int, spaced bool) {
	t.Helper()
	us, vs, d0 := gapRows(r, n, rows, spaced), gapRows(r, n+1, cols, spaced), gapRows(r, 1, rows*cols, true)[0]
	want := slices.Clone(d0)
	withBwdKernels(false, 1, func() { outerAcc(want, rows, cols, us, vs) })
	if spaced {
		got := slices.Clone(d0)
		if !outerAVX2(got, rows, cols, us, vs) {
			t.Fatalf("%s: the AVX2 tiles of outerAcc did not run", name)
		}
		requireSameRows(t, name+" outerAVX2", [][]float32{got}, [][]float32{want})
	}
	for _, procs := range []int{1, 3} {
		got := slices.Clone(d0)
		withBwdKernels(true, procs, func() { outerAcc(got, rows, cols, us, vs) })
		requireSameRows(t, fmt.Sprintf("%s procs=%d outerAcc", name, procs), [][]float32{got}, [][]float32{want})
	}
}

func requireSameRows(t *testing.T, name string, got, want [][]float32) {
	t.Helper()
	for b := range want {
		if !slices.Equal(math32Bits(got[b]), math32Bits(want[b])) {
			t.Fatalf("%s row %d: AVX2 tiles differ from scalar", name, b)
		}
	}
}

// TestOuter2SharedMatchesOuterAVX2 requires outer2Shared (the LoRA A
// gradients on one input, each strip of vs copied once for all of them)
// to give, bit for bit, what outerAVX2 gives each gradient alone and what
// the scalar kernels give: strips copied (rows of vs 256 floats or more
// apart) and read in place, column tails, tile heights left over, 1 and 3
// goroutines, through outerAccShared too. vs holds one row more than the
// batch, which must be left out.
func TestOuter2SharedMatchesOuterAVX2(t *testing.T) {
	if !cpufeat.AVX2FMA() {
		t.Skip("the CPU has no AVX2 and FMA3")
	}
	r := newRNG(31)
	all := [][4]int{{32, 1024, 13, 3}, {32, 300, 130, 2}, {8, 257, 5, 3}, {13, 600, 40, 2}, {3, 48, 1, 3}, {32, 17, 7, 2}, {64, 100, 9, 2}}
	few := [][4]int{{32, 300, 13, 3}, {13, 257, 7, 2}, {3, 48, 5, 2}}
	for _, sz := range qemuFew(all, few) {
		rows, cols, n, k := sz[0], sz[1], sz[2], sz[3]
		name := fmt.Sprint(sz)
		vs := gapRows(r, n+1, cols, true)
		uss, d0 := make([][][]float32, k), make([][]float32, k)
		for i := range k {
			uss[i], d0[i] = gapRows(r, n, rows, true), gapRows(r, 1, rows*cols, true)[0]
		}
		clone := func() [][]float32 {
			out := make([][]float32, k)
			for i := range out {
				out[i] = slices.Clone(d0[i])
			}
			return out
		}
		want, one := clone(), clone()
		withBwdKernels(false, 1, func() {
			for i := range k {
				outerAcc(want[i], rows, cols, uss[i], vs)
			}
		})
		withBwdKernels(true, 1, func() {
			for i := range k {
				if !outerAVX2(one[i], rows, cols, uss[i], vs) {
					t.Fatalf("%s: outerAVX2 did not run", name)
				}
			}
		})
		requireSameRows(t, name+" outerAVX2 per gradient", one, want)
		for _, procs := range []int{1, 3} {
			got, via := clone(), clone()
			withBwdKernels(true, procs, func() {
				if !outer2Shared(got, rows, cols, uss, vs) {
					t.Fatalf("%s: outer2Shared did not run", name)
				}
				outerAccShared(via, rows, cols, uss, vs)
			})
			requireSameRows(t, fmt.Sprintf("%s procs=%d outer2Shared", name, procs), got, want)
			requireSameRows(t, fmt.Sprintf("%s procs=%d outerAccShared", name, procs), via, want)
		}
	}
}

// TestBackwardAVX2PrefetchSameBits requires matMulT's tiles that prefetch
// the next tile's rows (bwd2PrefetchNext, on and off) to give the scalar
// kernels' bits: k not a multiple of the prefetching loop's 4 steps,
// tails of columns and of batch rows, weights taller than kcWhole; and
// a batch of bwd2PrefetchRows as the default leaves it.
func TestBackwardAVX2PrefetchSameBits(t *testing.T) {
	if !cpufeat.AVX2FMA() {
		t.Skip("the CPU has no AVX2 and FMA3")
	}
	defer func(p bool, n int) { bwd2PrefetchNext, bwd2PrefetchRows = p, n }(bwd2PrefetchNext, bwd2PrefetchRows)
	bwd2PrefetchRows = 0 // every batch here is short
	r := newRNG(31)
	// Under qemu only the prefetching tiles: TestBackwardAVX2MatchesScalar
	// runs the others there.
	for _, on := range qemuFew([]bool{false, true}, []bool{true}) {
		bwd2PrefetchNext = on
		// W taller than kcWhole only natively: the scalar reference's
		// software multiply-adds take minutes under qemu.
		shapes := [][4]int{{1031, 300, 9, 8}, {7, 50, 6, 3}, {3, 24, 4, 2}}
		for _, sz := range qemuFew(append([][4]int{{4099, 1000, 13, 32}}, shapes...), shapes) {
			rows, cols, n, rank := sz[0], sz[1], sz[2], sz[3]
			w, _, _ := benchMat(rows, cols)
			a, _, _ := benchMat(rank, cols)
			checkBackwardAVX2(t, fmt.Sprintf("prefetch=%v %v", on, sz), w, a, r, n, true)
		}
	}
	bwd2PrefetchNext, bwd2PrefetchRows = true, 256
	w, _, _ := benchMat(qemuFew([]int{1101}, []int{103})[0], 300) // wider than tCols, as the gate needs
	a, _, _ := benchMat(8, 300)
	checkBackwardAVX2(t, "prefetch from 256 rows, 258 rows", w, a, r, 258, true)
}
