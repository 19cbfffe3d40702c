//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// row16Variants are the generator's experimental stream and prefetch
// arrangements of the decoding kernel (row16Streams in asmgen/fwd).
var row16Variants = []struct {
	name string
	f32  func(x *float32, w *float32, stride, n int, out *[16]float32)
	bf   func(x *float32, w *uint16, stride, n int, out *[16]float32)
}{
	{"Ahead1K", fwdRow16F32Ahead1K, fwdRow16BF16Ahead1K},
	{"Ahead2K", fwdRow16F32Ahead2K, fwdRow16BF16Ahead2K},
	{"Ahead1KT0", fwdRow16F32Ahead1KT0, fwdRow16BF16Ahead1KT0},
	{"Pair", fwdRow16F32Pair, fwdRow16BF16Pair},
	{"PairAhead1K", fwdRow16F32PairAhead1K, fwdRow16BF16PairAhead1K},
	{"NextAhead1K", fwdRow16F32NextAhead1K, fwdRow16BF16NextAhead1K},
	{"Next2", fwdRow16F32Next2, fwdRow16BF16Next2},
	{"PairNext2", fwdRow16F32PairNext2, fwdRow16BF16PairNext2},
	{"PairNext4", fwdRow16F32PairNext4, fwdRow16BF16PairNext4},
	{"Unroll2", fwdRow16F32Unroll2, fwdRow16BF16Unroll2},
	{"PairNext2Unroll2", fwdRow16F32PairNext2Unroll2, fwdRow16BF16PairNext2Unroll2},
	{"Single4", fwdRow16F32Single4, fwdRow16BF16Single4},
	{"Single8", fwdRow16F32Single8, fwdRow16BF16Single8},
	{"Strided", fwdRow16F32Strided, fwdRow16BF16Strided},
	{"Strided2", fwdRow16F32Strided2, fwdRow16BF16Strided2},
	{"StridedAhead1K", fwdRow16F32StridedAhead1K, fwdRow16BF16StridedAhead1K},
	{"Same", fwdRow16F32, fwdRow16BF16},
}

// TestRow16VariantsMatchDotLanes requires every stream variant to give
// dotLanes' bits, as the product kernels do.
func TestRow16VariantsMatchDotLanes(t *testing.T) {
	if !fwdAsm {
		t.Skip("the AVX-512 kernels need a CPU with AVX-512")
	}
	r := newRNG(7)
	for _, n := range []int{1, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 1024, 1040, 1055, 3072} {
		stride := n + 3
		x := make([]float32, n)
		fill(x, r, 1)
		w := make([]float32, 16*stride)
		fill(w, r, 1)
		wb := make([]uint16, len(w))
		for i := range w {
			wb[i] = uint16(math.Float32bits(w[i]) >> 16)
			w[i] = bf16(wb[i])
		}
		for _, v := range row16Variants {
			var got, gotB [16]float32
			v.f32(&x[0], &w[0], stride, n, &got)
			v.bf(&x[0], &wb[0], stride, n, &gotB)
			for row := range 16 {
				want := dotLanes(w[row*stride:], x)
				if math.Float32bits(got[row]) != math.Float32bits(want) || math.Float32bits(gotB[row]) != math.Float32bits(want) {
					t.Errorf("%s n=%d row %d: f32 %v, bf16 %v, dotLanes %v", v.name, n, row, got[row], gotB[row], want)
				}
			}
		}
	}
}

// BenchmarkRow16Streams compares the stream variants with the product
// kernels on two threads from memory (matrices of the 0.6B layer shapes
// in huge pages): per variant the paired ratios product time over
// variant time (above 1: the variant faster), process CPU and wall,
// median and minimum over the rounds. Run with -benchtime 1x.
func BenchmarkRow16Streams(b *testing.B) {
	rounds := 9
	if n, err := strconv.Atoi(os.Getenv("ROW16_ROUNDS")); err == nil {
		rounds = n
	}
	only := regexp.MustCompile(os.Getenv("ROW16_VARIANTS")) // empty: all
	shapes := [][2]int{{2048, 1024}, {1024, 1024}, {1024, 1024}, {1024, 2048}, {3072, 1024}, {3072, 1024}, {1024, 3072}}
	var slab hugeSlab
	type mat[T any] struct {
		w          []T
		rows, cols int
	}
	var mb []mat[uint16]
	var mf []mat[float32]
	r := newRNG(3)
	for c := range 16 {
		for _, sh := range shapes {
			w := hugeSlabAlloc[uint16](&slab, sh[0]*sh[1])
			for i := range w {
				w[i] = uint16(math.Float32bits(float32(2*r.float64()-1)) >> 16)
			}
			mb = append(mb, mat[uint16]{w, sh[0], sh[1]})
			if c < 8 {
				wf := hugeSlabAlloc[float32](&slab, sh[0]*sh[1])
				for i := range wf {
					wf[i] = float32(2*r.float64() - 1)
				}
				mf = append(mf, mat[float32]{wf, sh[0], sh[1]})
			}
		}
	}
	x := make([]float32, 3072)
	fill(x, r, 1)
	type kb = func(x *float32, w *uint16, stride, n int, out *[16]float32)
	type kf = func(x *float32, w *float32, stride, n int, out *[16]float32)
	twoB := func(k kb) func() {
		return func() {
			var wg sync.WaitGroup
			for p := range 2 {
				wg.Go(func() {
					var out [16]float32
					for i := p; i < len(mb); i += 2 {
						m := mb[i]
						for j := 0; j < m.rows; j += 16 {
							k(&x[0], &m.w[j*m.cols], m.cols, m.cols, &out)
						}
					}
				})
			}
			wg.Wait()
		}
	}
	twoF := func(k kf) func() {
		return func() {
			var wg sync.WaitGroup
			for p := range 2 {
				wg.Go(func() {
					var out [16]float32
					for i := p; i < len(mf); i += 2 {
						m := mf[i]
						for j := 0; j < m.rows; j += 16 {
							k(&x[0], &m.w[j*m.cols], m.cols, m.cols, &out)
						}
					}
				})
			}
			wg.Wait()
		}
	}
	// ratios alternates which runs first each round.
	ratios := func(prod, v func()) (cpu, wall []float64) {
		for i := range rounds {
			a, bb := prod, v
			if i%2 == 1 {
				a, bb = v, prod
			}
			c0, w0 := processCPU(), wallClock()
			a()
			c1, w1 := processCPU(), wallClock()
			bb()
			c2, w2 := processCPU(), wallClock()
			rc, rw := (c1-c0)/(c2-c1), (w1-w0)/(w2-w1)
			if i%2 == 1 {
				rc, rw = 1/rc, 1/rw
			}
			cpu, wall = append(cpu, rc), append(wall, rw)
		}
		slices.Sort(cpu)
		slices.Sort(wall)
		return cpu, wall
	}
	load := func() string {
		s, _ := os.ReadFile("/proc/loadavg")
		return strings.Join(strings.Fields(string(s))[:3], " ")
	}
	probe := func(k func(*uint64, int, int, int, *[8]uint64), streams int) func() {
		return func() {
			var wg sync.WaitGroup
			for p := range 2 {
				wg.Go(func() {
					for i := p; i < len(mb); i += 2 {
						w := mb[i].w
						readStreamsSum(k, streams, 1024, unsafe.Slice((*uint64)(unsafe.Pointer(&w[0])), len(w)/4))
					}
				})
			}
			wg.Wait()
		}
	}
	for b.Loop() {
		// The probe's time over the product kernel's on the same
		// bfloat16 bytes (below 1: the kernel slower).
		for _, p := range []struct {
			name    string
			k       func(*uint64, int, int, int, *[8]uint64)
			streams int
		}{{"S4T1-1K", readS4T1, 4}, {"S8T1-1K", readS8T1, 8}} {
			l0 := load()
			cpu, wall := ratios(probe(p.k, p.streams), twoB(fwdRow16BF16))
			fmt.Fprintf(os.Stderr, "bf16-of-%-9s cpu med %.3f min %.3f max %.3f | wall med %.3f min %.3f max %.3f | load %s -> %s\n",
				p.name, cpu[rounds/2], cpu[0], cpu[rounds-1], wall[rounds/2], wall[0], wall[rounds-1], l0, load())
		}
		for _, v := range row16Variants {
			if !only.MatchString(v.name) {
				continue
			}
			for _, bf := range []bool{true, false} {
				var cpu, wall []float64
				l0 := load()
				if bf {
					cpu, wall = ratios(twoB(fwdRow16BF16), twoB(v.bf))
				} else {
					cpu, wall = ratios(twoF(fwdRow16F32), twoF(v.f32))
				}
				name := v.name + map[bool]string{true: "-bf16", false: "-f32"}[bf]
				b.ReportMetric(cpu[rounds/2], name+"-cpu")
				b.ReportMetric(wall[rounds/2], name+"-wall")
				fmt.Fprintf(os.Stderr, "%-18s cpu med %.3f min %.3f max %.3f | wall med %.3f min %.3f max %.3f | load %s -> %s\n",
					name, cpu[rounds/2], cpu[0], cpu[rounds-1], wall[rounds/2], wall[0], wall[rounds-1], l0, load())
			}
		}
	}
}
