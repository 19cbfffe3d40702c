//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
)

// BenchmarkForwardTileGap splits the gap between the forward product's
// 4×6 tile and the 512-bit FMA loop (fmaChains16) on one thread: each
// stage, as GFLOP per thread-CPU-second divided by the FMA loop's rate
// measured just before it (medians of rounds; a ratio, so a loaded
// machine distorts it less than a rate):
//
//   - l1: one tile and one group, both in L1, again and again;
//   - l2: one tile in L1, a block of groups (fwdL1TokBytes) in L2;
//   - rows: fwdTilesL1 over all rows of the shape on the packed batch
//     (weights from memory, prefetched a tile ahead);
//   - pack: newFwdPack alone (flops of the product it serves / its time,
//     so 1/pack adds to 1/rows);
//   - matmul: matMul on one thread (packing, slices, everything).
//
// Run with -cpu 1 -benchtime 1x.
func BenchmarkForwardTileGap(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, sh := range [][3]int{{2048, 1024, 512}, {3072, 1024, 512}, {1024, 2048, 512}, {1024, 3072, 512}, {3072, 1024, 1024}} {
		rows, cols, m := sh[0], sh[1], sh[2]
		w, _ := randMats(rows, cols, 1)
		xs, ys := tileRows(m, cols, 2), tileRows(m, rows, 3)
		b.Run(fmt.Sprintf("%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
			for b.Loop() {
				for _, st := range tileGapStages(w, xs, ys) {
					b.ReportMetric(tileGapShare(st.flop, st.run), "%peak-"+st.name)
				}
			}
		})
	}
}

// tileGapStage is one stage of BenchmarkForwardTileGap: its flops per run.
type tileGapStage struct {
	name string
	flop float64
	run  func()
}

// tileGapStages are the stages of BenchmarkForwardTileGap for w·xs.
func tileGapStages(w mat, xs, ys [][]float32) []tileGapStage {
	n, m := w.cols, len(xs)
	p := newFwdPack(xs, n, false)
	pl := packedLen(n)
	gb := min(m/4, max(1, fwdL1TokBytes/(4*pl)))
	acc := make([]float32, 384*gb)
	tile := func(groups int) func() {
		return func() {
			for range 4096 / groups {
				fwdTile6Groups(w, p.xp[:groups*pl], 0, ys[:4*groups], 0x3f, false, 0, acc)
			}
		}
	}
	unit := 2 * float64(6*4*n)
	full := 2 * float64(w.rows*n*m)
	return []tileGapStage{
		{"l1", unit * 4096, tile(1)},
		{"l2", unit * float64(4096/gb*gb), tile(gb)},
		{"rows", full, func() { fwdTilesL1(w, p.xp, ys[:m&^3], 0, w.rows, false) }},
		{"rows-whole", full, func() {
			defer func(kc int) { fwdKC = kc }(fwdKC)
			fwdKC = 1 << 20
			fwdTilesL1(w, p.xp, ys[:m&^3], 0, w.rows, false)
		}},
		{"rows-1152k", full, func() {
			defer func(tb int) { fwdL1TokBytes = tb }(fwdL1TokBytes)
			fwdL1TokBytes = 1152 << 10
			fwdTilesL1(w, p.xp, ys[:m&^3], 0, w.rows, false)
		}},
		{"rows-1536k", full, func() {
			defer func(tb int) { fwdL1TokBytes = tb }(fwdL1TokBytes)
			fwdL1TokBytes = 1536 << 10
			fwdTilesL1(w, p.xp, ys[:m&^3], 0, w.rows, false)
		}},
		{"pack", full, func() { newFwdPack(xs, n, false).release() }},
		{"matmul", full, func() { matRows(w, xs, ys, 0, w.rows, false) }},
	}
}

// tileGapShare is the median over rounds of run's flop per thread-CPU
// second over the FMA loop's, each run paired with a loop just before.
func tileGapShare(flop float64, run func()) float64 {
	const iters = 2_000_000
	sink := make([]float32, 16)
	rs := make([]float64, 7)
	run()
	for i := range rs {
		c0 := threadCPU()
		fmaChains16(iters, sink)
		c1 := threadCPU()
		run()
		c2 := threadCPU()
		peak := float64(10*16*2) * iters / (c1 - c0)
		rs[i] = 100 * flop / (c2 - c1) / peak
	}
	slices.Sort(rs)
	return rs[len(rs)/2]
}

// BenchmarkForwardGapParallel is BenchmarkForwardTileGap's last stage on
// every worker, by process CPU time against the FMA loop on every core
// (peakLoop16): matMul with the weights hot (the same matrix each run, so
// it stays in L3) and cold (one of enough copies to pass the L3 between
// uses, as a training step streams its weights from memory).
func BenchmarkForwardGapParallel(b *testing.B) {
	for _, sh := range [][3]int{{2048, 1024, 512}, {1024, 2048, 512}, {1024, 3072, 512}, {3072, 1024, 1024}} {
		rows, cols, m := sh[0], sh[1], sh[2]
		ws, xs, ys := coldMats(rows, cols), tileRows(m, cols, 2), tileRows(m, rows, 3)
		copies := len(ws)
		flop := 2 * float64(rows*cols*m)
		b.Run(fmt.Sprintf("%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
			for b.Loop() {
				next := 0
				b.ReportMetric(parallelGapShare(flop, func() { matMul(ws[0], xs, ys, false) }), "%peak-hot")
				b.ReportMetric(parallelGapShare(flop, func() {
					next = (next + 1) % copies
					matMul(ws[next], xs, ys, false)
				}), "%peak-cold")
			}
		})
	}
}

// parallelGapShare is tileGapShare on every core by process CPU time.
func parallelGapShare(flop float64, run func()) float64 {
	rs := make([]float64, 9)
	run()
	for i := range rs {
		_, peak := peakLoop16()
		c0 := processCPU()
		for range 4 {
			run()
		}
		rs[i] = 100 * 4 * flop / (processCPU() - c0) / 1e9 / peak
	}
	slices.Sort(rs)
	return rs[len(rs)/2]
}

// BenchmarkForwardPrefetchAB compares the tiles' prefetch of the next
// tile's weights spread over fwdPrefetchSpread of a call's steps (b) with
// one line every step from the first (a, spread 0), at spreads of 0.5,
// the default and 0.95, matMul on every worker with the weights cold
// (coldMats, as in a training step): medians of paired ratios b/a of
// process CPU time; below 1, spreading is faster.
func BenchmarkForwardPrefetchAB(b *testing.B) {
	spread := fwdPrefetchSpread
	defer func() { fwdPrefetchSpread = spread }()
	for _, sh := range [][3]int{{2048, 1024, 512}, {3072, 1024, 512}, {1024, 2048, 512}, {1024, 3072, 512}, {3072, 1024, 1024}, {1024, 3072, 1024}, {15360, 1024, 128}} {
		rows, cols, m := sh[0], sh[1], sh[2]
		ws, xs, ys := coldMats(rows, cols), tileRows(m, cols, 2), tileRows(m, rows, 3)
		copies := len(ws)
		next := 0
		run := func(s float64) func() {
			return func() {
				fwdPrefetchSpread = s
				next = (next + 1) % copies
				matMul(ws[next], xs, ys, false)
			}
		}
		b.Run(fmt.Sprintf("%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
			for b.Loop() {
				for _, s := range []float64{0.5, spread, 0.95} {
					b.ReportMetric(pairedRatioBy(processCPU, 15, run(0), run(s)), fmt.Sprintf("cpu-%g/line", s))
				}
			}
		})
	}
}
