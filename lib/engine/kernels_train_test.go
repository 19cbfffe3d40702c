package engine

import (
	"math"
	"runtime"
	"slices"
	"testing"
)

// matMulT against float64 sums, bit-identical for bfloat16 weights (widened
// exactly) and for any number of goroutines, for wide and narrow matrices.
func TestMatMulT(t *testing.T) {
	for _, sz := range [][3]int{{300, 600, 5}, {1000, 32, 9}, {7, 3, 2}} {
		rows, cols, n := sz[0], sz[1], sz[2]
		w, _, _ := benchMat(rows, cols)
		wb := mat{rows: rows, cols: cols, bf: make([]uint16, len(w.data))}
		for i, v := range w.data {
			wb.bf[i] = uint16(math.Float32bits(v) >> 16)
			w.data[i] = math.Float32frombits(uint32(wb.bf[i]) << 16)
		}
		r := newRNG(3)
		ys := rowsOf(make([]float32, n*rows), n, rows)
		for _, y := range ys {
			fill(y, r, 1)
		}
		run := func(m mat, procs int) []float32 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			out := make([]float32, n*cols)
			matMulT(m, ys, rowsOf(out, n, cols), false)
			return out
		}
		got := run(w, 2)
		for _, other := range [][]float32{run(w, 1), run(wb, 2), run(wb, 3)} {
			if !slices.Equal(got, other) {
				t.Fatalf("%v: results differ between goroutine splits or weight formats", sz)
			}
		}
		for b := range n {
			for i := range cols {
				var s float64
				for j := range rows {
					s += float64(ys[b][j]) * float64(w.data[j*cols+i])
				}
				if math.Abs(float64(got[b*cols+i])-s) > 1e-4*math.Sqrt(float64(rows)) {
					t.Fatalf("%v: element [%d][%d] = %v, want %v", sz, b, i, got[b*cols+i], s)
				}
			}
		}
	}
}

// withKernels runs f with the assembly tiles on or off (off: the scalar
// reference, with the archsimd kernels off too) and GOMAXPROCS procs.
func withKernels(asm bool, procs int, f func()) {
	defer func(b, b2, s bool) { bwdAsm, bwdAVX2, useSIMD = b, b2, s }(bwdAsm, bwdAVX2, useSIMD)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	// Both assembly paths off for the reference: without GOEXPERIMENT=simd
	// (simdOK false) avx2Bwd would otherwise still pick the AVX2 tiles.
	bwdAsm, bwdAVX2, useSIMD = asm && bwdAsm, asm && bwdAVX2, asm && simdOK
	f()
}

// The assembly tiles give the scalar kernels' bits for matMulT (float32
// and bfloat16 weights, writing and accumulating) and outerAcc, over
// shapes with column and row tails, one vector and many, 1 and 3
// goroutines, and rows that are not evenly spaced (which take the other
// path).
func TestBackwardAsmMatchesScalar(t *testing.T) {
	if !bwdAsm {
		t.Log("no AVX-512 here: comparing the fallback kernels with the scalar ones")
	}
	r := newRNG(11)
	randRows := func(n, width int, spaced bool) [][]float32 { return gapRows(r, n, width, spaced) }
	clone := cloneGapRows
	for _, sz := range [][3]int{{300, 600, 5}, {1000, 32, 9}, {7, 3, 2}, {129, 1000, 13}, {64, 257, 130},
		{33, 17, 1}, {130, 80, 7}, {40, 48, 12}, {20, 300, 17}, {1100, 300, 13}, {4100, 17, 130},
		{32, 300, 13}, {4100, 32, 130}} {
		rows, cols, n := sz[0], sz[1], sz[2]
		w, _, _ := benchMat(rows, cols)
		wb := mat{rows: rows, cols: cols, bf: truncBF16(w.data)}
		for _, spaced := range []bool{true, false} {
			ys, x0 := randRows(n, rows, spaced), randRows(n, cols, spaced)
			us, vs, d0 := randRows(n, rows, spaced), randRows(n, cols, spaced), randRows(1, rows*cols, true)[0]
			run := func(asm bool, procs int) (out [][][]float32) {
				withKernels(asm, procs, func() {
					for _, m := range []mat{w, wb} {
						for _, acc := range []bool{false, true} {
							xs := clone(x0)
							matMulT(m, ys, xs, acc)
							out = append(out, xs)
						}
					}
					d := slices.Clone(d0)
					outerAcc(d, rows, cols, us, vs)
					out = append(out, [][]float32{d})
				})
				return out
			}
			want := run(false, 1)
			for _, procs := range []int{1, 3} {
				got := run(true, procs)
				for i := range want {
					for b := range want[i] {
						if !slices.Equal(math32Bits(got[i][b]), math32Bits(want[i][b])) {
							t.Fatalf("%v spaced=%v procs=%d product %d row %d: assembly differs from scalar", sz, spaced, procs, i, b)
						}
					}
				}
			}
		}
	}
}

// gapRows returns n random rows of width values, 3 floats apart when
// spaced (evenly spaced, as the assembly tiles need), else with every
// other row allocated on its own.
func gapRows(r *rng, n, width int, spaced bool) [][]float32 {
	rs := rowsOf(make([]float32, n*(width+3)), n, width+3)
	for i := range rs {
		if !spaced && i%2 == 1 {
			rs[i] = make([]float32, width)
		}
		rs[i] = rs[i][:width]
		fill(rs[i], r, 1)
	}
	return rs
}

// cloneGapRows copies rs into evenly spaced rows 3 floats apart.
func cloneGapRows(rs [][]float32) [][]float32 {
	out := rowsOf(make([]float32, len(rs)*(len(rs[0])+3)), len(rs), len(rs[0])+3)
	for i := range out {
		out[i] = out[i][:len(rs[0])]
		copy(out[i], rs[i])
	}
	return out
}

func math32Bits(f []float32) []uint32 {
	out := make([]uint32, len(f))
	for i, v := range f {
		out[i] = math.Float32bits(v)
	}
	return out
}
