package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

func needBF16(t *testing.T) {
	t.Helper()
	if !bf16Compute() {
		t.Skip("this CPU has no AVX512-BF16: the bf16 path does not run here")
	}
}

func needAMX(t *testing.T) {
	t.Helper()
	needBF16(t)
	if !amxReady() {
		t.Skip("no AMX (or the kernel refused the tile state): only the AVX512-BF16 kernels run here")
	}
}

// withAMX runs f with the AMX kernels on or off.
func withAMX(on bool, f func()) {
	if on && !amxReady() {
		panic("withAMX(true) without AMX")
	}
	old := bf16UseAMX
	bf16UseAMX = func() bool { return on }
	defer func() { bf16UseAMX = old }()
	f()
}

// randBF16Mat is a rows × cols bfloat16 matrix of values in [-1, 1),
// packed for the bf16 path.
func randBF16Mat(rng *rand.Rand, rows, cols int) mat {
	m := mat{rows: rows, cols: cols, bf: make([]uint16, rows*cols)}
	for i := range m.bf {
		m.bf[i] = roundBF16(float32(2*rng.Float64() - 1))
	}
	m.vn = packVNNI(m)
	return m
}

func randVecs(rng *rand.Rand, m, n int) [][]float32 {
	xs := make([][]float32, m)
	for i := range xs {
		xs[i] = make([]float32, n)
		for k := range xs[i] {
			xs[i][k] = float32(rng.NormFloat64())
		}
	}
	return xs
}

func newOutputs(m, n int) [][]float32 { return randVecs(rand.New(rand.NewPCG(9, 9)), m, n) }

// sameStartOutputs is m random output vectors of n values (base) and
// three copies of them, for kernels compared on outputs they add into.
func sameStartOutputs(r *rng, m, n int) (base [][]float32, outs [3][][]float32) {
	base = newOutputs(m, n)
	for i := range base {
		fill(base[i], r, 1)
	}
	for k := range outs {
		outs[k] = newOutputs(m, n)
		for i := range base {
			copy(outs[k][i], base[i])
		}
	}
	return base, outs
}

func TestBF16RoundRowMatchesGo(t *testing.T) {
	needBF16(t)
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, 4096)
	for i := range src {
		src[i] = math.Float32frombits(rng.Uint32())
	}
	src[0], src[1] = math.Float32frombits(0x3f808000), math.Float32frombits(0x3f818000) // ties
	src[2], src[3] = math.Float32frombits(0x00000123), float32(math.Inf(-1))
	dst := make([]uint16, len(src))
	bf16RoundRow(&dst[0], &src[0], len(src))
	for i, f := range src {
		if want := roundBF16(f); dst[i] != want && !(math.IsNaN(float64(f)) && dst[i]&0x7fc0 == 0x7fc0) {
			t.Fatalf("bf16RoundRow(%#08x) = %#04x, roundBF16 %#04x", math.Float32bits(f), dst[i], want)
		}
	}
}

// TestBF16ProductMatchesReference checks both kernels' products against
// a float64 sum of the same bfloat16-rounded inputs: the float32 sum of K
// exact products can be off by at most about K·2⁻²⁴·Σ|products|.
func TestBF16ProductMatchesReference(t *testing.T) {
	needBF16(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][3]int{{1, 64, 32}, {3, 50, 100}, {17, 96, 64}, {40, 200, 160}, {5, 33, 1030}} {
		m, rows, cols := sh[0], sh[1], sh[2]
		w, xs := randBF16Mat(rng, rows, cols), randVecs(rng, m, cols)
		for _, amx := range []bool{false, true} {
			if amx && !amxReady() {
				continue
			}
			ys := newOutputs(m, rows)
			withAMX(amx, func() { matMul(w, xs, ys, false) })
			for b := range m {
				for j := range rows {
					var s, abs float64
					for k := range cols {
						p := float64(bf16(roundBF16(xs[b][k]))) * float64(bf16(w.bf[j*cols+k]))
						s += p
						abs += math.Abs(p)
					}
					if d := math.Abs(float64(ys[b][j]) - s); d > float64(cols+1)*0x1p-24*abs {
						t.Fatalf("amx=%v %v: y[%d][%d] = %g, float64 reference %g", amx, sh, b, j, ys[b][j], s)
					}
				}
			}
		}
	}
}

// TestBF16AVX512MatchesEmulation pins VDPBF16PS's arithmetic: per
// column pair, the odd column's product is added first, then the even
// one's, each addition rounded to float32 (as Intel's pseudo-code says).
// TDPBF16PS (AMX) rounds otherwise: within the reference tolerance, but
// not these bits, so AMX machines and AVX512-BF16-only machines differ.
func TestBF16AVX512MatchesEmulation(t *testing.T) {
	needBF16(t)
	rng := rand.New(rand.NewPCG(5, 6))
	checkAVXEmulation(t, rng, 7, 40, 320, "")
}

// checkAVXEmulation runs an m × rows × cols product on the AVX512-BF16
// kernels and wants every output's bits to be TestBF16AVX512MatchesEmulation's.
func checkAVXEmulation(t *testing.T, rng *rand.Rand, m, rows, cols int, what string) {
	t.Helper()
	w, xs := randBF16Mat(rng, rows, cols), randVecs(rng, m, cols)
	ys := newOutputs(m, rows)
	withAMX(false, func() { matMul(w, xs, ys, false) })
	for b := range m {
		for j := range rows {
			var acc float32
			for k := 0; k < cols; k += 2 {
				p0 := bf16(roundBF16(xs[b][k])) * bf16(w.bf[j*cols+k])
				p1 := bf16(roundBF16(xs[b][k+1])) * bf16(w.bf[j*cols+k+1])
				acc += p1 // exact products: float32 holds 16-bit mantissas
				acc += p0
			}
			if ys[b][j] != acc {
				t.Fatalf("%s: y[%d][%d] = %g (%#x), emulated %g (%#x)", what, b, j, ys[b][j], math.Float32bits(ys[b][j]), acc, math.Float32bits(acc))
			}
		}
	}
}

// TestBF16AVXBlockingsMatchEmulation runs every generated AVX512-BF16
// kernel (avxBF16Kernels, avxBF16KernelsPf) as the blocking of a product
// whose tokens and blocks leave edges, and wants the emulation's bits
// from each: the blocking a CPU picks (bf16AVX) and the prefetching
// change no output.
func TestBF16AVXBlockingsMatchEmulation(t *testing.T) {
	needBF16(t)
	defer func(old struct{ t, n, n1, chunk int }) { bf16AVX = old }(bf16AVX)
	rng := rand.New(rand.NewPCG(9, 10))
	for tn := range avxBF16Kernels {
		for n, k := range avxBF16Kernels[tn] {
			if k == nil {
				continue
			}
			bf16AVX.chunk = bf16Chunk
			if tn == 1 {
				bf16AVX.n1 = n
				for v := range avxBF16T1Variants { // the prefetch distances
					bf16T1Variant = v
					checkAVXEmulation(t, rng, 1, 16*(2*n+1)+5, 96, fmt.Sprintf("one token, %d blocks, variant %d", n, v))
				}
				bf16T1Variant = 0
			}
			if n <= 6 {
				bf16AVX.t, bf16AVX.n = tn, n
				for _, pf := range []bool{false, true} { // avxBF16KernelsPf
					bf16AVXPrefetch = pf
					checkAVXEmulation(t, rng, 2*tn+1, 16*(2*n+1)+5, 96, fmt.Sprintf("%d tokens × %d blocks, prefetch %v", tn, n, pf))
				}
				bf16AVXPrefetch = true
			}
		}
	}
}

// TestBF16BatchInvariance: a vector's outputs have the same bits alone,
// in any batch, on one thread or several, whole or by row ranges.
func TestBF16BatchInvariance(t *testing.T) {
	needBF16(t)
	rng := rand.New(rand.NewPCG(7, 8))
	const m, rows, cols = 45, 200, 256
	w, xs := randBF16Mat(rng, rows, cols), randVecs(rng, m, cols)
	for _, amx := range []bool{false, true} {
		if amx && !amxReady() {
			continue
		}
		withAMX(amx, func() {
			all := newOutputs(m, rows)
			matMul(w, xs, all, false)
			prev := runtime.GOMAXPROCS(1)
			one := newOutputs(m, rows)
			matMul(w, xs, one, false)
			runtime.GOMAXPROCS(prev)
			checkSlabOutputs(t, w, xs, all)
			for b := range m {
				alone := newOutputs(1, rows)
				matRows(w, xs[b:b+1], alone, 0, 48, false)
				matRows(w, xs[b:b+1], alone, 48, rows, false)
				sub := newOutputs(m-b, rows)
				matMul(w, xs[b:], sub, false)
				for j := range rows {
					if v := all[b][j]; v != one[b][j] || v != alone[0][j] || v != sub[0][j] {
						t.Fatalf("amx=%v: y[%d][%d] batched %g, one thread %g, alone %g, in a shorter batch %g",
							amx, b, j, v, one[b][j], alone[0][j], sub[0][j])
					}
				}
			}
		})
	}
}

// checkSlabOutputs runs the product into rows of one slab, 8 columns
// wider than w has rows (the AMX tiles store whole blocks straight into
// such rows), and wants the bits of want and the extra columns untouched.
func checkSlabOutputs(t *testing.T, w mat, xs, want [][]float32) {
	t.Helper()
	for _, n := range []int{16, 32, len(xs)} {
		slab := grow(nil, n, w.rows+8)
		for _, y := range slab {
			for j := range y {
				y[j] = -7
			}
		}
		matMul(w, xs[:n], slab, false)
		for b, y := range slab {
			if !slices.Equal(y[:w.rows], want[b]) {
				t.Fatalf("%d rows of a slab: row %d differs from separate outputs", n, b)
			}
			for j := w.rows; j < len(y); j++ {
				if y[j] != -7 {
					t.Fatalf("%d rows of a slab: row %d column %d past the outputs written", n, b, j)
				}
			}
		}
	}
}

// TestBF16AMXUnderSignals runs AMX products on every core while signals
// (the runtime's preemption signal, SIGURG) and garbage collections
// interrupt them: the kernel saves the tiles on Go's signal stacks and the
// results must not change.
func TestBF16AMXUnderSignals(t *testing.T) {
	needAMX(t)
	rng := rand.New(rand.NewPCG(11, 12))
	w, xs := randBF16Mat(rng, 512, 1024), randVecs(rng, 64, 1024)
	want := newOutputs(64, 512)
	matRows(w, xs, want, 0, 512, false)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				syscall.Kill(syscall.Getpid(), syscall.SIGURG)
				runtime.GC()
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	defer close(stop)
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for range 4 {
		wg.Go(func() {
			ys := newOutputs(64, 512)
			for range 30 {
				matRows(w, xs, ys, 0, 512, false)
				for b := range ys {
					for j := range ys[b] {
						if ys[b][j] != want[b][j] {
							errs <- "a product interrupted by signals changed"
							return
						}
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// TestBF16TransposedProduct checks matMulT on the bf16 path (the training
// backward's input gradient) against a float64 sum of the same rounded
// inputs, on both kernels, and that a vector's result does not depend on
// its batch.
func TestBF16TransposedProduct(t *testing.T) {
	needBF16(t)
	rng := rand.New(rand.NewPCG(13, 14))
	for _, sh := range [][3]int{{1, 64, 48}, {5, 33, 50}, {37, 130, 96}, {20, 256, 1030}} {
		m, rows, cols := sh[0], sh[1], sh[2]
		w, ys := randBF16Mat(rng, rows, cols), randVecs(rng, m, rows)
		for _, amx := range []bool{false, true} {
			if amx && !amxReady() {
				continue
			}
			xs, alone := newOutputs(m, cols), newOutputs(1, cols)
			withAMX(amx, func() {
				matMulT(w, ys, xs, false)
				matMulT(w, ys[m-1:], alone, false)
			})
			for b := range m {
				for c := range cols {
					var s, abs float64
					for r := range rows {
						p := float64(bf16(roundBF16(ys[b][r]))) * float64(bf16(w.bf[r*cols+c]))
						s += p
						abs += math.Abs(p)
					}
					if d := math.Abs(float64(xs[b][c]) - s); d > float64(rows+1)*0x1p-24*abs {
						t.Fatalf("amx=%v %v: x[%d][%d] = %g, float64 reference %g", amx, sh, b, c, xs[b][c], s)
					}
				}
			}
			for c := range cols {
				if alone[0][c] != xs[m-1][c] {
					t.Fatalf("amx=%v %v: column %d is %g alone, %g in the batch", amx, sh, c, alone[0][c], xs[m-1][c])
				}
			}
		}
	}
}

// TestBF16PanelsMatchAlone runs a batch long and wide enough to be cut
// into panels of tokens (bf16Panel) and wants each vector's bits alone,
// on AMX and on AVX512-BF16, and the panels to cover every token once.
func TestBF16PanelsMatchAlone(t *testing.T) {
	needBF16(t)
	rng := rand.New(rand.NewPCG(11, 12))
	const m, rows, cols = 200, 48, 3072
	if p := bf16Panel(m, bf16Pitch(cols)); p >= m || p%32 != 0 {
		t.Fatalf("panel of %d tokens for %d: want whole tiles, more than one panel", p, m)
	}
	if p := bf16Panel(0, bf16Pitch(cols)); p != 0 {
		t.Fatalf("panel of %d tokens for none", p)
	}
	w, xs := randBF16Mat(rng, rows, cols), randVecs(rng, m, cols)
	for _, amx := range []bool{false, true} {
		if amx && !amxReady() {
			continue
		}
		withAMX(amx, func() {
			got := newOutputs(m, rows)
			matMul(w, xs, got, false)
			for b := range m {
				alone := newOutputs(1, rows)
				matMul(w, xs[b:b+1], alone, false)
				if !slices.Equal(got[b], alone[0]) {
					t.Fatalf("amx=%v: token %d of %d: batched outputs differ from alone", amx, b, m)
				}
			}
		})
	}
}

// TestBF16GroupMatchesAlone: matrices run together over one rounding of
// the vectors (matMulBF16Group) give each the bits of its product alone.
func TestBF16GroupMatchesAlone(t *testing.T) {
	needBF16(t)
	rng := rand.New(rand.NewPCG(15, 16))
	ws := []mat{randBF16Mat(rng, 200, 300), randBF16Mat(rng, 48, 300), randBF16Mat(rng, 33, 300)}
	for _, m := range []int{1, 70} {
		xs := randVecs(rng, m, 300)
		ys := make([][][]float32, len(ws))
		for i, w := range ws {
			ys[i] = newOutputs(m, w.rows)
		}
		matMulBF16Group(ws, xs, ys, false)
		for i, w := range ws {
			alone := newOutputs(m, w.rows)
			matMul(w, xs, alone, false)
			for b := range alone {
				if !slices.Equal(alone[b], ys[i][b]) {
					t.Fatalf("%d vectors: matrix %d, vector %d: grouped outputs differ from alone", m, i, b)
				}
			}
		}
	}
}

// TestBF16LinearAddMatchesAccumulate: linearAdd's product into a slab of
// its own, added afterwards, gives the residual the bits of the product
// accumulated into it, for batches on every core and single tokens.
func TestBF16LinearAddMatchesAccumulate(t *testing.T) {
	needBF16(t)
	rng := rand.New(rand.NewPCG(17, 18))
	w := randBF16Mat(rng, 1024, 1056)
	m := &Model{}
	for _, n := range []int{1, 300} {
		xs, want := randVecs(rng, n, w.cols), newOutputs(n, w.rows+5)
		got := grow(nil, n, w.rows+5)
		for i := range got {
			copy(got[i], want[i])
		}
		m.linear(&workspace{}, w, nil, make([]*LoRA, n), 0, modO, xs, want, true)
		m.linearAdd(&workspace{}, w, nil, make([]*LoRA, n), 0, modO, xs, got)
		for i := range want {
			if !slices.Equal(got[i][:w.rows], want[i][:w.rows]) {
				t.Fatalf("%d tokens: row %d: linearAdd differs from linear accumulating", n, i)
			}
		}
	}
}
