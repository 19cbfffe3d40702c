package engine

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// fma32Exact is x·y + z computed exactly and rounded once to float32.
func fma32Exact(x, y, z float32) float32 {
	bf := func(v float32) *big.Float { return new(big.Float).SetPrec(400).SetFloat64(float64(v)) }
	s := bf(x)
	s.Mul(s, bf(y))
	s.Add(s, bf(z))
	r, _ := s.Float32()
	return r
}

// fma32HardCases have x·y just off a float32 halfway point of 1 + x·y
// once rounded to float64, where rounding twice gives the wrong bits.
var fma32HardCases = [][3]uint32{
	{0x3f8007f1, 0x337ff01f, 0x3f800000},
	{0x3f8007f2, 0x337ff01d, 0x3f800000},
	{0x3f8007f4, 0x337ff019, 0x3f800000},
}

func TestFMA32(t *testing.T) {
	check := func(x, y, z float32) {
		t.Helper()
		want := math.Float32bits(fma32Exact(x, y, z))
		if got := math.Float32bits(fma32(x, y, z)); got != want {
			t.Fatalf("fma32(%g, %g, %g) = %#x, want %#x", x, y, z, got, want)
		}
		if got := math.Float32bits(fma32Soft(x, y, z)); got != want {
			t.Fatalf("fma32Soft(%g, %g, %g) = %#x, want %#x", x, y, z, got, want)
		}
	}
	for _, c := range fma32HardCases {
		x, y, z := math.Float32frombits(c[0]), math.Float32frombits(c[1]), math.Float32frombits(c[2])
		if float32(math.FMA(float64(x), float64(y), float64(z))) == fma32Exact(x, y, z) {
			t.Fatalf("case %#x is not hard: rounding twice gets it right", c)
		}
		check(x, y, z)
		check(-x, y, -z)
	}
	r := rand.New(rand.NewPCG(1, 2))
	// Random bit patterns over every finite exponent (subnormals too), and
	// near-cancelling sums.
	finite := func() float32 {
		for {
			if v := math.Float32frombits(r.Uint32()); !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) {
				return v
			}
		}
	}
	n := 200000
	if testing.Short() {
		n = 20000 // the emulated runs: big.Float under qemu is slow
	}
	for range n {
		x, y := finite(), finite()
		check(x, y, finite())
		check(x, y, -float32(float64(x)*float64(y)))
		check(float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64()))
	}
	check(float32(math.Inf(1)), 1, 1)
	check(0, -1, 0)
	check(math.MaxFloat32, 2, -math.MaxFloat32)
}

// TestScalarKernelsFuse checks the scalar product kernels against sums
// written with fma32Soft in their order: each term must be fused, on every
// architecture (on arm64 the compiler does the fusing, and the scalar
// kernels are the only path, so no other test would notice a product
// rounded before its add). An unfused sum must differ somewhere, or the
// data could not tell the two apart.
func TestScalarKernelsFuse(t *testing.T) {
	const rows, cols, n = 24, 70, 5
	w, wb := randMats(rows, cols, 7)
	r := newRNG(8)
	xs, ys := rowsOf(make([]float32, n*cols), n, cols), rowsOf(make([]float32, n*rows), n, rows)
	for b := range n {
		fill(xs[b], r, 1)
		fill(ys[b], r, 1)
	}
	unfusedDiffers := false
	for j := range rows {
		for _, x := range xs {
			var fused, plain [16]float32
			for k, xv := range x {
				fused[k&15] = fma32Soft(w.data[j*cols+k], xv, fused[k&15])
				plain[k&15] += float32(w.data[j*cols+k] * xv)
			}
			want := laneTree(&fused)
			unfusedDiffers = unfusedDiffers || laneTree(&plain) != want
			if got := dotLanes(w.row(j), x); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("dotLanes row %d = %g, want %g", j, got, want)
			}
			wide := make([]float32, cols)
			wb.rowInto(j, wide)
			if got := dotLanesBF(wb.bf[j*cols:(j+1)*cols], x); math.Float32bits(got) != math.Float32bits(dotLanes(wide, x)) {
				t.Fatalf("dotLanesBF row %d differs from dotLanes on the widened row", j)
			}
		}
	}
	if !unfusedDiffers {
		t.Fatal("no dot product tells fused from unfused sums: the data is too easy")
	}
	// matTBlockScalar: xs[b][i] += Σ_j ys[b][j]·W[j][i], j ascending.
	got := cloneRows(xs)
	matTBlockScalar(w, ys, got, 0, rows, 0, cols, nil)
	want := cloneRows(xs)
	for b, y := range ys {
		for j := range rows {
			for i := range cols {
				want[b][i] = fma32Soft(y[j], w.data[j*cols+i], want[b][i])
			}
		}
	}
	requireBits(t, "matTBlockScalar", got, want)
	// outerRowsScalar: dst[o][k] += Σ_b ys[b][o]·xs[b][k], b ascending.
	dst := make([]float32, rows*cols)
	outerRowsScalar(dst, cols, ys, xs, 0, rows)
	ref := make([]float32, rows*cols)
	for b := range ys {
		for o := range rows {
			for k := range cols {
				ref[o*cols+k] = fma32Soft(ys[b][o], xs[b][k], ref[o*cols+k])
			}
		}
	}
	requireBits(t, "outerRowsScalar", [][]float32{dst}, [][]float32{ref})
	ax := cloneRows(xs[:1])
	axpyFMA(ax[0], ys[0][0], xs[1])
	for i := range ref[:cols] {
		ref[i] = fma32Soft(ys[0][0], xs[1][i], xs[0][i])
	}
	requireBits(t, "axpyFMA", ax, [][]float32{ref[:cols]})
}

func cloneRows(rs [][]float32) [][]float32 {
	out := make([][]float32, len(rs))
	for i, r := range rs {
		out[i] = append([]float32(nil), r...)
	}
	return out
}

func requireBits(t *testing.T, what string, got, want [][]float32) {
	t.Helper()
	for b := range want {
		for i := range want[b] {
			if math.Float32bits(got[b][i]) != math.Float32bits(want[b][i]) {
				t.Fatalf("%s [%d][%d] = %g, want %g (each term one fused multiply-add)", what, b, i, got[b][i], want[b][i])
			}
		}
	}
}
