//go:build goexperiment.simd && amd64

package engine

import (
	"math"
	"simd/archsimd"
	"slices"
	"testing"
)

// elemLengths cover empty, shorter than a vector, every tail length of
// the 4- and 8-lane loops, and model widths.
var elemLengths = []int{0, 1, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 23, 31, 64, 100, 131}

// spread returns n float32s spread over ±scale, with zeros of both signs
// and, when extremes, values beyond exp64's range and NaN.
func spread(n int, scale float32, seed uint64, extremes bool) []float32 {
	r := newRNG(seed)
	x := make([]float32, n)
	for i := range x {
		x[i] = (2*r.uniform32() - 1) * scale
	}
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-30, -1e-30}
	if extremes {
		special = append(special, 800, -800, 3e38, -3e38, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()))
	}
	for i, s := range special {
		if j := 7*i + 2; j < n {
			x[j] = s
		}
	}
	return x
}

func bitsEqual64(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool {
		return math.Float64bits(x) == math.Float64bits(y) || (math.IsNaN(x) && math.IsNaN(y))
	})
}

// bothPaths runs fn with the vector kernels on, then off, and returns
// both results.
func bothPaths[T any](fn func() T) (vec, scalar T) {
	withSIMD(true, func() { vec = fn() })
	withSIMD(false, func() { scalar = fn() })
	return vec, scalar
}

// withAVX512 runs fn with the 512-bit kernels allowed or not (off, a
// machine with AVX-512 checks the 256-bit bodies too).
func withAVX512(on bool, fn func()) {
	defer func(old bool) { avx512 = old }(avx512)
	avx512 = on
	fn()
}

func to64(f []float32) []float64 {
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out
}

// TestSIMDElementwiseMatchScalar runs every elementwise kernel's vector
// and scalar bodies on the same inputs and requires the same bits
// (NaN matching NaN), over lengths with every tail.
func TestSIMDElementwiseMatchScalar(t *testing.T) {
	if !simdOK {
		t.Fatal("built with GOEXPERIMENT=simd but the CPU has no AVX2: the vector kernels cannot be checked here")
	}
	for _, n := range elemLengths {
		s := uint64(n)
		x, y, z, w := spread(n, 8, s, false), spread(n, 3, s+1, false), spread(n, 2, s+2, false), spread(n, 1.5, s+3, false)
		big := spread(n, 50, s+4, true)
		kernels := map[string]func() []float64{
			"expScores32": func() []float64 {
				p, sc := make([]float64, n), slices.Clone(big)
				sum := expScores32(p, sc, 0.125, 3)
				return append(append(p, sum), to64(sc)...)
			},
			"expScores32Nil": func() []float64 {
				p := slices.Clone(big)
				return append(to64(p), expScores32(nil, p, 1, -2))
			},
			"expScaled": func() []float64 {
				p := make([]float64, n)
				expScaled(p, big, 0.7, 1.5)
				return append(p, expScaledSum(big, 0.7, 1.5))
			},
			"softmax32": func() []float64 {
				p := slices.Clone(big)
				softmax32(p)
				q := slices.Clone(x)
				softmax32(q)
				return to64(append(p, q...))
			},
			"logSumExp": func() []float64 {
				return []float64{logSumExp(big, 1), logSumExp(x, 0.7), logSumExp(x, 1.3)}
			},
			"logSumExpKeep": func() []float64 {
				e := make([]float64, n)
				lse, sum := logSumExpKeep(e, big)
				row := make([]float32, n)
				scaleExps(row, e, -0.3/sum)
				return append(append(e, lse, sum, logSumExp(big, 1)), to64(row)...)
			},
			"siluMul": func() []float64 { h := make([]float32, n); siluMul(h, big, y); return to64(h) },
			"siluMulBackward": func() []float64 {
				dg, du := slices.Clone(z), make([]float32, n)
				siluMulBackward(dg, du, big, y)
				return to64(append(dg, du...))
			},
			"rmsNorm": func() []float64 {
				out := make([]float32, n)
				rmsNorm(out, x, w, 1e-6)
				return append(to64(out), sumSquares(x))
			},
			"rmsNormBackward": func() []float64 { dx := slices.Clone(z); rmsNormBackward(dx, y, x, w, 1e-5); return to64(dx) },
			"ropeRotate": func() []float64 {
				a, b := slices.Clone(x), slices.Clone(y)
				ropeRotate(a, b, z, w, false)
				c, d := slices.Clone(x), slices.Clone(y)
				ropeRotate(c, d, z, w, true)
				return to64(slices.Concat(a, b, c, d))
			},
			"widenBF16": func() []float64 {
				h := make([]uint16, n)
				for i, v := range big {
					h[i] = uint16(math.Float32bits(v) >> 16)
				}
				out := make([]float32, n)
				widenBF16(out, h)
				return to64(out)
			},
			"adamUpdate": func() []float64 {
				pw, pm, pv := slices.Clone(x), spread(n, 0.1, s+5, false), spread(n, 0.01, s+6, false)
				for i := range pv {
					pv[i] = float32(math.Abs(float64(pv[i])))
				}
				adamUpdate(pw, pm, pv, y, adamConsts{coef: 0.8, b1: 0.9, b2: 0.95, decay: 0.999, stepSize: 1e-3, bc2: 0.3, eps: 1e-12})
				return to64(slices.Concat(pw, pm, pv))
			},
		}
		for name, k := range kernels {
			vec, scalar := bothPaths(k)
			if !bitsEqual64(vec, scalar) {
				t.Errorf("%s n=%d: vector and scalar bodies differ:\n%v\n%v", name, n, vec, scalar)
			}
			if !avx512 {
				continue
			}
			withAVX512(false, func() { vec, _ = bothPaths(k) })
			if !bitsEqual64(vec, scalar) {
				t.Errorf("%s n=%d: 256-bit and scalar bodies differ:\n%v\n%v", name, n, vec, scalar)
			}
		}
	}
}

// TestSIMDExp64MatchesScalar checks exp4 (and exp8x2 with AVX-512)
// against exp64 on arguments across and beyond its range, and NaN.
func TestSIMDExp64MatchesScalar(t *testing.T) {
	r := newRNG(3)
	p := make([]float64, 4096)
	for i := range p {
		p[i] = (r.float64() - 0.5) * 1500
	}
	copy(p, []float64{709, 709.0000001, -708, -708.0000001, math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e300, -1e300, 5e-324})
	q, w := make([]float64, len(p)), make([]float64, len(p))
	for i := 0; i < len(p); i += 4 {
		exp4(archsimd.LoadFloat64x4Slice(p[i:])).StoreSlice(q[i:])
	}
	if avx512 {
		for i := 0; i < len(p); i += 16 {
			a, b := exp8x2(archsimd.LoadFloat64x8Slice(p[i:]), archsimd.LoadFloat64x8Slice(p[i+8:]))
			a.StoreSlice(w[i:])
			b.StoreSlice(w[i+8:])
		}
	}
	archsimd.ClearAVXUpperBits()
	for i, x := range p {
		if want := exp64(x); !bitsEqual64(q[i:i+1], []float64{want}) || avx512 && !bitsEqual64(w[i:i+1], []float64{want}) {
			t.Fatalf("exp64(%g) = %v: exp4 %v, exp8x2 %v", x, want, q[i], w[i])
		}
	}
}

// TestLossRowKernelsMatchScalar runs the loss's per-row kernels (max,
// exponentials kept with their sum, gradient scaling) on rows as long as
// a vocabulary, with logits close together so that a changed order of the
// sum's additions shows in its bits, and requires the scalar bodies' bits
// on the 512-bit, 256-bit and scalar paths; and it plants the largest
// logit at each offset of a 64-logit block, where each of the max's four
// accumulators sees it.
func TestLossRowKernelsMatchScalar(t *testing.T) {
	for _, n := range []int{63, 64, 65, 4099, 151936 + 13} {
		row := spread(n, 0.5, uint64(n), false)
		k := func() []float64 {
			e := make([]float64, n)
			lse, sum := logSumExpKeep(e, row)
			g := make([]float32, n)
			scaleExps(g, e, -0.7/sum)
			return append(append(e, lse, sum, logSumExp(row, 1)), to64(g)...)
		}
		vec, scalar := bothPaths(k)
		if !bitsEqual64(vec, scalar) {
			t.Errorf("n=%d: vector and scalar bodies differ", n)
		}
		if avx512 {
			withAVX512(false, func() { vec, _ = bothPaths(k) })
			if !bitsEqual64(vec, scalar) {
				t.Errorf("n=%d: 256-bit and scalar bodies differ", n)
			}
		}
		for p := n / 2; p < min(n/2+64, n); p += 7 {
			r := slices.Clone(row)
			r[p] = 9
			if m := maxScaled(r, 1); m != 9 {
				t.Errorf("n=%d: largest logit 9 at %d, maxScaled gives %v", n, p, m)
			}
		}
	}
}

// TestExpScaled4SameBits requires expScaledVec's and expScaledSumVec's
// 4-lane loops in their own functions (expScaled4Loop) to give the bits
// they gave inline, every exponential and the sum, on the 4-lane path
// (AVX-512 off) and on this CPU's, over every tail length and a
// vocabulary's row, with values beyond exp64's range and NaN.
func TestExpScaled4SameBits(t *testing.T) {
	if !simdOK {
		t.Fatal("built with GOEXPERIMENT=simd but the CPU has no AVX2: the vector kernels cannot be checked here")
	}
	defer func(old bool) { expScaled4Loop = old }(expScaled4Loop)
	for _, wide := range []bool{false, avx512} {
		withAVX512(wide, func() {
			for _, n := range append(slices.Clone(elemLengths), 151936) {
				big := spread(n, 50, uint64(n), true)
				for _, temp := range []float64{1, 0.7} {
					want, got := make([]float64, n), make([]float64, n)
					expScaled4Loop = false
					expScaled(want, big, 1/temp, 1.5)
					expScaled4Loop = true
					expScaled(got, big, 1/temp, 1.5)
					expScaled4Loop = false
					want = append(want, expScaledSum(big, 1/temp, 1.5))
					expScaled4Loop = true
					got = append(got, expScaledSum(big, 1/temp, 1.5))
					for i := range want {
						if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
							t.Fatalf("AVX-512 %v, n %d, T %v: exponential %d of %d (the last: the sum) %v in its own loop, %v inline", wide, n, temp, i, n, got[i], want[i])
						}
					}
				}
			}
		})
	}
}
