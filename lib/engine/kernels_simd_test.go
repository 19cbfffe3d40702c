//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
)

// withSIMD runs fn with the vector kernels switched on or off.
func withSIMD(on bool, fn func()) {
	defer func(old bool) { useSIMD = old }(useSIMD)
	useSIMD = on
	fn()
}

func randRows(n, width int, seed uint64) [][]float32 {
	r := newRNG(seed)
	xs := rowsOf(make([]float32, n*width), n, width)
	for _, x := range xs {
		fill(x, r, 1)
	}
	return xs
}

func flat(xs [][]float32) []float32 { return slices.Concat(xs...) }

// TestSIMDMatchesScalar runs every vector kernel and its scalar twin on the
// same inputs (odd shapes with leftover rows, columns and vectors; float32
// and bfloat16 weights; accumulating or not) and requires identical bits,
// and requires each vector of a batch to get the bits it gets alone and
// under any number of goroutines.
func TestSIMDMatchesScalar(t *testing.T) {
	if !simdOK {
		t.Fatal("built with GOEXPERIMENT=simd but the CPU lacks AVX2 or FMA3: the vector kernels cannot be checked here")
	}
	for _, sz := range [][3]int{{40, 37, 9}, {64, 256, 5}, {33, 300, 2}, {300, 64, 7}, {16, 16, 4}, {1000, 32, 6}, {50, 77, 1}, {64, 1024, 1}} {
		rows, cols, n := sz[0], sz[1], sz[2]
		w, wb := randMats(rows, cols, 1)
		xs, dys := randRows(n, cols, 2), randRows(n, rows, 3)
		for _, m := range []mat{w, wb} {
			for _, acc := range []bool{false, true} {
				name := fmt.Sprintf("%v bf16=%v acc=%v", sz, m.bf != nil, acc)
				fwd := func() []float32 {
					ys := randRows(n, rows, 4)
					matMul(m, xs, ys, acc)
					return flat(ys)
				}
				bwd := func() []float32 {
					dxs := randRows(n, cols, 5)
					matMulT(m, dys, dxs, acc)
					return flat(dxs)
				}
				outer := func() []float32 {
					d := flat(randRows(rows, cols, 6))
					outerAcc(d, rows, cols, dys, xs)
					return d
				}
				for kname, k := range map[string]func() []float32{"matMul": fwd, "matMulT": bwd, "outerAcc": outer} {
					var vec, scalar []float32
					withSIMD(true, func() { vec = k() })
					withSIMD(false, func() { scalar = k() })
					if !bitsEqual(vec, scalar) {
						t.Fatalf("%s %s: vector and scalar kernels differ", kname, name)
					}
				}
			}
			var batch []float32
			withSIMD(true, func() {
				ys := randRows(n, rows, 4)
				matMul(m, xs, ys, false)
				batch = flat(ys)
			})
			for _, procs := range []int{1, 3} {
				ys := randRows(n, rows, 4)
				func() {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
					matMul(m, xs, ys, false)
				}()
				if !bitsEqual(flat(ys), batch) {
					t.Fatalf("%v: GOMAXPROCS=%d changes the batched product's bits", sz, procs)
				}
			}
			for b := range n {
				one := make([]float32, rows)
				matMul(m, xs[b:b+1], [][]float32{one}, false)
				if !bitsEqual(one, batch[b*rows:(b+1)*rows]) {
					t.Fatalf("%v: vector %d alone differs from the same vector in a batch of %d", sz, b, n)
				}
			}
		}
	}
}

// TestSIMDVectorOpsMatchScalar does the same for the attention kernels
// (dot1, axpy) and the products' fused axpyFMA over lengths around the
// vector width.
func TestSIMDVectorOpsMatchScalar(t *testing.T) {
	for _, n := range []int{7, 8, 9, 64, 100, 128} {
		xs := randRows(3, n, uint64(n))
		var dv, ds float32
		var yv, ys []float32
		withSIMD(true, func() { dv, yv = dot1(xs[0], xs[1]), slices.Clone(xs[2]); axpy(yv, dv, xs[0]) })
		withSIMD(false, func() { ds, ys = dot1(xs[0], xs[1]), slices.Clone(xs[2]); axpy(ys, ds, xs[0]) })
		if math.Float32bits(dv) != math.Float32bits(ds) || !bitsEqual(yv, ys) {
			t.Fatalf("n=%d: dot1 or axpy differs between the vector and scalar kernels", n)
		}
		fv, fs := slices.Clone(xs[2]), slices.Clone(xs[2])
		withSIMD(true, func() { axpyFMA(fv, dv, xs[0]) })
		withSIMD(false, func() { axpyFMA(fs, dv, xs[0]) })
		if !bitsEqual(fv, fs) {
			t.Fatalf("n=%d: axpyFMA differs between the vector and scalar kernels", n)
		}
		if n >= 64 && bitsEqual(fv, yv) {
			t.Fatalf("n=%d: axpyFMA gives axpy's bits; it should round once", n)
		}
	}
}

func bitsEqual(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}
