//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// interleavePairs stores rows 2p and 2p+1 of a rows×cols bfloat16 matrix
// as one run of 2·cols: element 2k row 2p's k, element 2k+1 row 2p+1's.
func interleavePairs(bf []uint16, rows, cols int) []uint16 {
	out := make([]uint16, len(bf))
	for p := 0; p < rows/2; p++ {
		a, b, d := bf[2*p*cols:], bf[(2*p+1)*cols:], out[2*p*cols:]
		for k := range cols {
			d[2*k], d[2*k+1] = a[k], b[k]
		}
	}
	return out
}

func TestRowPairExpSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, cols := range []int{16, 32, 48, 1000, 1024, 1040, 3072, 7} {
		m := randBF16Mat(rng, 16, cols)
		p := interleavePairs(m.bf, 16, cols)
		x := randVecs(rng, 1, cols)[0]
		var want, got4, got8 [16]float32
		fwdRow16BF16(&x[0], &m.bf[0], cols, cols, &want)
		fwdRow16BF16P4(&x[0], &p[0], 2*cols, cols, &got4)
		fwdRow16BF16P8(&x[0], &p[0], 2*cols, cols, &got8)
		if want != got4 || want != got8 {
			t.Fatalf("cols %d: %v\n%v\n%v", cols, want, got4, got8)
		}
	}
}

type rowExpMat struct {
	rows, cols int
	bf, vn     []uint16
}

// BenchmarkRowPairExp: one-token products over 672 MiB of bfloat16 (the
// 0.6B layer shapes) with row-major and row-pair layouts, median of
// paired ratios (pair ÷ row-major; below 1: the pair layout is faster).
func BenchmarkRowPairExp(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 2))
	plain, pairs := make([]rowExpMat, 112), make([]rowExpMat, 112)
	for i := range plain {
		rows, cols := 3072, 1024
		if i%2 == 1 {
			rows, cols = 1024, 3072
		}
		m := randBF16Mat(rng, rows, cols)
		plain[i] = rowExpMat{rows, cols, m.bf, m.vn}
		pairs[i] = rowExpMat{rows, cols, interleavePairs(m.bf, rows, cols), nil}
	}
	x := randVecs(rng, 1, 3072)[0]
	var sink float32
	ys := make([]float32, 3072)
	run := func(ms []rowExpMat, k int, part, parts int) {
		var out [16]float32
		var pp []uint16
		xb := packBF16Rows([][]float32{x[:1024]}, 1024, &pp)
		var qq []uint16
		xb3 := packBF16Rows([][]float32{x}, 3072, &qq)
		for _, m := range ms {
			lo, hi := m.rows*part/parts, m.rows*(part+1)/parts
			if k == 1 || k == 2 {
				xv := xb
				if m.cols == 3072 {
					xv = xb3
				}
				withAMX(k == 1, func() { bf16Rows(mat{rows: m.rows, cols: m.cols, vn: m.vn}, xv, 1, [][]float32{ys}, lo, hi, false) })
				continue
			}
			for j := lo; j < hi; j += 16 {
				switch k {
				case 0:
					fwdRow16BF16(&x[0], &m.bf[j*m.cols], m.cols, m.cols, &out)
				case 4:
					fwdRow16BF16P4(&x[0], &m.bf[j*m.cols], 2*m.cols, m.cols, &out)
				case 8:
					fwdRow16BF16P8(&x[0], &m.bf[j*m.cols], 2*m.cols, m.cols, &out)
				}
			}
		}
		sink += out[0]
	}
	one := func(ms []rowExpMat, k int) func() { return func() { run(ms, k, 0, 1) } }
	two := func(ms []rowExpMat, k int) func() {
		return func() {
			var wg sync.WaitGroup
			for p := range 2 {
				wg.Go(func() {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					run(ms, k, p, 2)
				})
			}
			wg.Wait()
		}
	}
	bytes := 0.0
	for _, m := range plain {
		bytes += float64(2 * m.rows * m.cols)
	}
	rate := func(f func()) float64 { t := wallClock(); f(); return bytes / (wallClock() - t) / 1e9 }
	for b.Loop() {
		var r [5][]float64
		for range 5 {
			bw := readBandwidth() / 1e9
			for i, k := range []int{0, 4, 1, 2} {
				ms := plain
				if k == 4 {
					ms = pairs
				}
				r[i] = append(r[i], rate(two(ms, k))/bw)
			}
			r[4] = append(r[4], bw)
		}
		for i := range r {
			slices.Sort(r[i])
		}
		b.Logf("2t wall share of probe (median of 5): row16 %.2f P4 %.2f amx %.2f avx512bf16 %.2f; probe %.1f GB/s", r[0][2], r[1][2], r[2][2], r[3][2], r[4][2])
		runtime.LockOSThread()
		b.Logf("1t cpu ratio to row16: amx %.3f avx512bf16 %.3f", pairedRatio(5, one(plain, 0), one(plain, 1)), pairedRatio(5, one(plain, 0), one(plain, 2)))
		runtime.UnlockOSThread()
		continue
		a1, p4, p8 := pairedRatio(7, one(plain, 0), one(plain, 0)), pairedRatio(11, one(plain, 0), one(pairs, 4)), 0.0
		runtime.UnlockOSThread()
		a2, q4, q8 := pairedRatioBy(processCPU, 11, two(plain, 0), two(plain, 0)), pairedRatioBy(processCPU, 15, two(plain, 0), two(pairs, 4)), pairedRatioBy(wallClock, 15, two(plain, 0), two(pairs, 4))
		b.Logf("1t AA %.3f P4 %.3f P8 %.3f | 2t cpu AA %.3f P4 %.3f wall P4 %.3f", a1, p4, p8, a2, q4, q8)
	}
	_ = fmt.Sprint(sink)
}
