package engine

import (
	"fmt"
	"math"
	"runtime"
	"testing"
)

// randMats returns a float32 matrix whose values are exactly bfloat16 and
// the same matrix held as bfloat16.
func randMats(rows, cols int, seed uint64) (mat, mat) { return randMatsFrom(newRNG(seed), rows, cols) }

// randMatsFrom is randMats drawing from r.
func randMatsFrom(r *rng, rows, cols int) (mat, mat) {
	w := mat{rows: rows, cols: cols, data: make([]float32, rows*cols)}
	wb := mat{rows: rows, cols: cols, bf: make([]uint16, rows*cols)}
	for i := range w.data {
		wb.bf[i] = uint16(math.Float32bits(r.uniform32()-0.5) >> 16)
		w.data[i] = bf16(wb.bf[i])
	}
	return w, wb
}

// fwdCase returns a float32 matrix whose values are exactly bfloat16, the
// same matrix as bfloat16, and m random input vectors.
func fwdCase(rows, cols, m int, seed uint64) (mat, mat, [][]float32) {
	r := newRNG(seed)
	w, wb := randMatsFrom(r, rows, cols)
	xs := rowsOf(make([]float32, m*cols), m, cols)
	for _, x := range xs {
		fill(x, r, 1)
	}
	return w, wb, xs
}

// TestForwardKernelsMatchScalar runs the forward product's vector path
// (the AVX-512 assembly where the CPU has it) and the scalar reference
// dotLanes on the same inputs and requires identical bits: row counts and
// column counts around the 4- and 16-wide tiles (K not a multiple of 16),
// M = 1…128 vectors, float32 and bfloat16 weights, accumulating or not,
// under GOMAXPROCS 1 and 3; and each vector gets the bits it gets alone.
func TestForwardKernelsMatchScalar(t *testing.T) {
	if runtime.GOARCH == "amd64" && !fwdAsm && !fwdAVX2 {
		if emulated() {
			// qemu's "max" CPU has AVX2 and FMA3: the run exists to check
			// the AVX2 kernels, which need both.
			t.Fatal("emulated x86-64 CPU without the AVX2+FMA3 kernels selected")
		}
		t.Log("no AVX-512, or no AVX2 with FMA3: only the scalar path is checked")
	}
	if emulated() && fwdAVX2 && !fwdAsm {
		// Here the vector path is the AVX2 kernels, and
		// TestForwardAVX2MatchesScalar runs them over the same kinds of
		// shape; M = 128 on 300x1040 alone took minutes under qemu.
		t.Skip("the AVX2 kernels are this CPU's vector path: TestForwardAVX2MatchesScalar checks them")
	}
	shapes := [][2]int{{1, 5}, {3, 16}, {4, 17}, {5, 33}, {16, 1}, {17, 100}, {33, 15}, {40, 256}, {20, 600}, {64, 1024}, {300, 1040}}
	for _, sh := range shapes {
		for _, m := range []int{1, 2, 3, 4, 5, 7, 8, 17, 128} {
			w, wb, xs := fwdCase(sh[0], sh[1], m, uint64(sh[0]*1000+sh[1]))
			for _, mm := range []mat{w, wb} {
				for _, acc := range []bool{false, true} {
					name := fmt.Sprintf("%dx%d M=%d bf16=%v acc=%v", sh[0], sh[1], m, mm.bf != nil, acc)
					checkForward(t, name, mm, xs, acc)
				}
			}
		}
	}
}

// startRows is m output rows of n columns holding distinct values, so
// that a product adding into them shows whether it added.
func startRows(m, n int) [][]float32 {
	ys := rowsOf(make([]float32, m*n), m, n)
	for b, y := range ys {
		for j := range y {
			y[j] = float32(b-j) / 8
		}
	}
	return ys
}

func checkForward(t *testing.T, name string, w mat, xs [][]float32, acc bool) {
	t.Helper()
	init := func() [][]float32 { return startRows(len(xs), w.rows) }
	want := init()
	matRowsScalar(w, xs, want, 0, w.rows, acc)
	for _, procs := range []int{1, 3} {
		got := init()
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			matMul(w, xs, got, acc)
		}()
		for b := range got {
			if !sameBits(got[b], want[b]) {
				t.Fatalf("%s GOMAXPROCS=%d: vector %d differs from the scalar reference", name, procs, b)
			}
		}
	}
	for b := range xs {
		one := init()[b : b+1]
		matMul(w, xs[b:b+1], one, acc)
		if !sameBits(one[0], want[b]) {
			t.Fatalf("%s: vector %d alone differs from the same vector in the batch", name, b)
		}
	}
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestDotLanesOrder pins the dot-form order on values where it matters:
// summed sequentially, 1e8 + 1 + … + 1 - 1e8 is 0 in float32, while the
// lanes keep the ones apart from the large terms until the tree.
func TestDotLanesOrder(t *testing.T) {
	x := make([]float32, 32)
	w := make([]float32, 32)
	for i := range x {
		x[i], w[i] = 1, 1
	}
	w[0], w[16] = 1e8, -1e8 // lane 0: 1e8 then -1e8 → 0
	// lanes 1..15 hold 2 each (k and k+16), lane 0 holds 0: tree sum 30.
	if got := dotLanes(w, x); got != 30 {
		t.Fatalf("dotLanes = %v, want 30 (lane partial sums, then the tree)", got)
	}
	var seq float32
	for k := range x {
		seq += float32(w[k] * x[k])
	}
	if seq == 30 {
		t.Fatal("the example does not separate the dot-form from a sequential sum")
	}
	// The tree adds lane i and i+8 first: with lane 0 = 2^24 and lanes 1
	// and 9 = 1, the ones meet before they meet 2^24 (sum 2^24+2); adding
	// neighbouring lanes first, or left to right, each 1 is lost in 2^24.
	var a [16]float32
	a[0], a[1], a[9] = 1<<24, 1, 1
	if got := laneTree(&a); got != 1<<24+2 {
		t.Fatalf("laneTree = %v, want %v", got, float32(1<<24+2))
	}
}
