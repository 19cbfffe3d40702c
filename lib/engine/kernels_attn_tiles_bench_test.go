//go:build goexperiment.simd && amd64

package engine

import (
	"strconv"
	"testing"
	"unsafe"
)

// BenchmarkAttnTiles times the attention's register tiles alone, operands
// in L1, on Qwen3-0.6B's head (dim 128), in GFLOP per second of process
// CPU time beside the one-core 512-bit FMA loop measured between the
// runs (x-fma: the tile's share of it). Run with -cpu 1: it is what the
// tiles reach when nothing but their own loads and reductions stalls them.
func BenchmarkAttnTiles(b *testing.B) {
	if !avx512 {
		b.Skip("no AVX-512 on this CPU")
	}
	const hd = 128
	for _, k := range []int{64, 256} {
		a, bm, c := randRows(1, 6*k, 1)[0], randRows(1, k*hd, 2)[0], make([]float32, 6*hd)
		b.Run("weighted6/k="+strconv.Itoa(k), func(b *testing.B) {
			tileRate(b, 2*6*hd*float64(k), func() {
				weightedTile(unsafe.Pointer(&c[0]), hd, unsafe.Pointer(&a[0]), k, unsafe.Pointer(&bm[0]), hd, k, 6, hd)
			})
		})
	}
	const nk = 64 // keys: four tiles
	keys := randRows(1, nk*hd, 4)[0]
	const nq = 30 // ten groups of three queries
	qs := randRows(1, nq*hd, 5)[0]
	scT := make([]float32, nq*nk)
	b.Run("dotsT3", func(b *testing.B) {
		tileRate(b, 2*nq*nk*hd, func() {
			for t := 0; t < nk; t += dotsTile {
				attnDotsT3(&scT[t], 4*nk, &qs[0], 4*hd, &keys[t*hd], hd, nq/3)
			}
		})
	})
}

// tileRate runs fn in batches and reports its GFLOP per CPU-second and
// its share of the one-core FMA loop run between the batches.
func tileRate(b *testing.B, flop float64, fn func()) {
	const batch = 2000
	var cpu, peak float64
	sink := make([]float32, 16)
	for b.Loop() {
		c0 := processCPU()
		for range batch {
			fn()
		}
		c1 := processCPU()
		fmaChains16(2_000_000, sink)
		c2 := processCPU()
		cpu += c1 - c0
		peak += float64(10*16*2) * 2_000_000 / (c2 - c1)
	}
	rate := flop * batch * float64(b.N) / cpu / 1e9
	b.ReportMetric(rate, "GFLOP/cpu-s")
	b.ReportMetric(rate/(peak/float64(b.N)/1e9), "x-fma")
}

// BenchmarkSoftmaxBlock times the forward softmax of one block's score
// rows (16 positions × 2 query heads of Qwen3-0.6B at 512 keys, rows
// padded as attendBlock lays them out: scoreStride), in CPU-µs per block.
func BenchmarkSoftmaxBlock(b *testing.B) {
	const nq, p0 = 32, 496
	ld := scoreStride(p0 + nq/2)
	raw := randRows(1, nq*ld, 9)[0]
	sc := make([]float32, len(raw))
	rows := make([][]float32, nq)
	for j := range rows {
		rows[j] = sc[j*ld : j*ld+p0+j/2+1]
	}
	var cpu float64
	for b.Loop() {
		copy(sc, raw)
		c0 := processCPU()
		for range 200 {
			softmaxRows(rows, 0.088, nil, 0, 2)
		}
		cpu += processCPU() - c0
	}
	b.ReportMetric(cpu/200/float64(b.N)*1e6, "cpu-us/block")
}
