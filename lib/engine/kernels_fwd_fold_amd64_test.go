package engine

import (
	"fmt"
	"runtime"
	"testing"
)

// TestMatMulFoldMatchesScalar checks matMulFold (W·x, then a LoRA's B·t
// added while the rows are in cache) against the scalar reference run
// as two products, W's then B's added: the same bits, written or added,
// on one and two threads, with runs of rows from the smallest (48) to
// the default, rows not a multiple of 6 or 16, long rows in pieces, and
// a batch in slices; and that the fold takes exactly the batches it
// should (fwdCols on every slice).
func TestMatMulFoldMatchesScalar(t *testing.T) {
	if !fwdAsm {
		t.Skip("the fold runs on the AVX-512 kernels, which this CPU lacks")
	}
	defer func(fb, sb int) { fwdFoldBytes, fwdSliceBytes = fb, sb }(fwdFoldBytes, fwdSliceBytes)
	for _, c := range []struct{ rows, cols, rank, m, slice int }{
		{1000, 64, 32, 128, 0}, {3001, 96, 16, 131, 0}, {773, 1040, 64, 129, 0},
		{2003, 64, 32, 256, 128}, {611, 64, 48, 262, 132},
		{200, 64, 32, 1024, 192}, // even slices of 168-172, where steps of 192 left 64
	} {
		fwdSliceBytes = c.slice * packedLen(c.cols) // c.slice vectors a slice (0: whole)
		w, _, xs := fwdCase(c.rows, c.cols, c.m, uint64(c.rows))
		b, _, ts := fwdCase(c.rows, c.rank, c.m, uint64(c.rows+1))
		for _, fb := range []int{4 << 10, 256 << 10} {
			fwdFoldBytes = fb
			for _, acc := range []bool{false, true} {
				name := fmt.Sprintf("%dx%d rank %d M=%d slice %d fold %d acc=%v", c.rows, c.cols, c.rank, c.m, c.slice, fb, acc)
				checkFold(t, name, w, xs, b, ts, acc)
			}
		}
	}
	// Not taken: a slice under fwdColsMinTokens (300 = 2·128 + 44), a
	// batch under it, B of a rank fwdCols does not take, bfloat16 B.
	w, _, xs := fwdCase(100, 64, 300, 7)
	b, bb, ts := fwdCase(100, 32, 300, 8)
	b8, _, ts8 := fwdCase(100, 8, 300, 9)
	fwdSliceBytes = 128 * packedLen(64)
	ys := rowsOf(make([]float32, 300*100), 300, 100)
	for name, ok := range map[string]bool{
		"slice of 44": matMulFoldAsm(w, xs, ys, b, ts, false),
		"rank 8":      matMulFoldAsm(w, xs[:128], ys[:128], b8, ts8[:128], false),
		"bf16 B":      matMulFoldAsm(w, xs[:128], ys[:128], bb, ts[:128], false),
		"127 vectors": matMulFoldAsm(w, xs[:127], ys[:127], b, ts[:127], false),
	} {
		if ok {
			t.Errorf("matMulFoldAsm took a batch it should leave (%s)", name)
		}
	}
}

// checkFold runs matMulFold on GOMAXPROCS 1 and 2, requiring that it takes
// the product (matMulFoldAsm) and gives the scalar reference's bits.
func checkFold(t *testing.T, name string, w mat, xs [][]float32, b mat, ts [][]float32, acc bool) {
	t.Helper()
	init := func() [][]float32 { return startRows(len(xs), w.rows) }
	want := init()
	matRowsScalar(w, xs, want, 0, w.rows, acc)
	matRowsScalar(b, ts, want, 0, w.rows, true)
	for _, procs := range []int{1, 2} {
		got := init()
		var took bool
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			took = matMulFoldAsm(w, xs, got, b, ts, acc)
		}()
		if !took {
			t.Fatalf("%s GOMAXPROCS=%d: matMulFoldAsm did not take the product", name, procs)
		}
		for i := range got {
			if !sameBits(got[i], want[i]) {
				t.Fatalf("%s GOMAXPROCS=%d: vector %d differs from the scalar reference", name, procs, i)
			}
		}
	}
}

// TestTrainLinearPacksOnceKeepsBits checks LoRA linears on one packed
// batch (packedIn: A and W, and a second layer reading the same vectors,
// as k after q) against the scalar reference of t = A·x and y = W·x
// (+ bias) + B·t, written and added, on one and two threads, where the
// fold takes the batch and where it does not (a batch under
// fwdColsMinTokens, a rank the fold does not take, a bias).
func TestTrainLinearPacksOnceKeepsBits(t *testing.T) {
	if !fwdAsm {
		t.Skip("the shared pack is the AVX-512 kernels', which this CPU lacks")
	}
	for _, c := range []struct {
		rows, cols, rank, m int
		bias                bool
	}{{301, 64, 32, 130, false}, {97, 1040, 16, 37, false}, {64, 96, 8, 160, false}, {50, 64, 32, 130, true}} {
		name := fmt.Sprintf("%dx%d rank %d M=%d bias=%v", c.rows, c.cols, c.rank, c.m, c.bias)
		_, _, xs := fwdCase(1, c.cols, c.m, uint64(c.rows))
		type layer struct {
			w, a, b mat
			bias    []float32
		}
		ls := make([]layer, 2)
		for i := range ls {
			l := &ls[i]
			l.w, _, _ = fwdCase(c.rows+i, c.cols, 1, uint64(c.rows+10*i+1))
			l.a, _, _ = fwdCase(c.rank, c.cols, 1, uint64(c.rows+10*i+2))
			l.b, _, _ = fwdCase(c.rows+i, c.rank, 1, uint64(c.rows+10*i+3))
			if c.bias {
				l.bias = startRows(1, c.rows+i)[0]
			}
		}
		for _, acc := range []bool{false, true} {
			for _, procs := range []int{1, 2} {
				func() {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
					in := packIn(ls[0].w, xs)
					defer in.release()
					for i, l := range ls {
						ts, ys := startRows(c.m, c.rank), startRows(c.m, l.w.rows)
						in.linear(l.w, l.bias, &trainModule{pair: &loraPair{a: l.a, b: l.b}}, xs, ys, ts, acc)
						wantT, want := startRows(c.m, c.rank), startRows(c.m, l.w.rows)
						matRowsScalar(l.a, xs, wantT, 0, c.rank, false)
						matRowsScalar(l.w, xs, want, 0, l.w.rows, acc)
						for _, y := range want {
							for j, b := range l.bias {
								y[j] += b
							}
						}
						matRowsScalar(l.b, wantT, want, 0, l.w.rows, true)
						for v := range ys {
							if !sameBits(ts[v], wantT[v]) || !sameBits(ys[v], want[v]) {
								t.Fatalf("%s layer %d acc=%v GOMAXPROCS=%d: vector %d differs from the scalar reference", name, i, acc, procs, v)
							}
						}
					}
				}()
			}
		}
	}
}
