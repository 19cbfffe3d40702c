//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/tinkershell/tinker/lib/models"
)

// BenchmarkLoneRowAttnAB times one layer's attention of a lone decoding
// row on the Qwen3-0.6B heads (16 query, 8 KV, dim 128) at positions 16,
// 64, 250 and 1000, the Go vector kernels (loneRowAsm off) against the
// generated ones (LONEROW_OLD=tilez: the generated ones with the 64-column
// tiles attnTileZ for the weighted sums), alternating in one thread, the order swapped each
// round (LONEROW_ROUNDS, default 41). It reports the medians, lower
// quartiles and minima of the per-round ratios old/new (above 1: the
// generated kernels faster), thread CPU and wall. Run with -benchtime 1x.
func BenchmarkLoneRowAttnAB(b *testing.B) {
	defer func(old, w bool) { loneRowAsm, loneTileW = old, w }(loneRowAsm, loneTileW)
	rounds := envInt("LONEROW_ROUNDS", 41)
	oldTileZ := os.Getenv("LONEROW_OLD") == "tilez" // old: the 64-column tiles for the weighted sums
	c := Config{Shape: models.Shape{Heads: 16, KVHeads: 8, HeadDim: 128}}
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	for _, pos := range []int{16, 64, 250, 1000} {
		b.Run(fmt.Sprintf("pos%d", pos), func(b *testing.B) {
			runtime.LockOSThread() // threadCPU: the sub-benchmark's own goroutine
			defer runtime.UnlockOSThread()
			n := pos + 1
			m := &Model{cfg: c}
			ws := &workspace{q: randRows(1, qd, 1), att: randRows(1, qd, 2), scores: make([][]float32, 1)}
			seq := &kvCache{k: [][]float32{flat(randRows(n, kvd, 3))}, v: [][]float32{flat(randRows(n, kvd, 4))}}
			rows := []row{{seq: seq, pos: pos}}
			reps := max(1, 200000/n) // about 10-20 ms a side
			run := func(asm bool) (wall, cpu float64) {
				loneRowAsm = asm || oldTileZ
				loneTileW = asm || !oldTileZ
				t0, c0 := time.Now(), threadCPU()
				for range reps {
					m.attendRow(ws, rows, 0, 0, 0, 0, c.KVHeads)
				}
				return time.Since(t0).Seconds(), threadCPU() - c0
			}
			for b.Loop() {
				rw, rc, _, newCPU := alternateRounds(rounds, run)
				b.ReportMetric(median(rc), "cpu-ratio-med")
				b.ReportMetric(quartileLow(rc), "cpu-ratio-q1")
				b.ReportMetric(slices.Min(rc), "cpu-ratio-min")
				b.ReportMetric(median(rw), "wall-ratio-med")
				b.ReportMetric(slices.Min(rw), "wall-ratio-min")
				b.ReportMetric(newCPU/float64(rounds*reps)*1e9, "ns-cpu/new")
				b.Logf("pos %d, load %s", pos, loadAvg())
			}
		})
	}
}

// alternateRounds runs the old (run(false)) and new (run(true)) variants
// rounds times each, the order swapped every round, and returns each
// round's wall and CPU ratio old/new and the new variant's total wall
// and CPU seconds.
func alternateRounds(rounds int, run func(asm bool) (wall, cpu float64)) (rw, rc []float64, newW, newC float64) {
	for r := range rounds {
		var ow, oc, nw, nc float64
		if r%2 == 0 {
			ow, oc = run(false)
			nw, nc = run(true)
		} else {
			nw, nc = run(true)
			ow, oc = run(false)
		}
		rw, rc = append(rw, ow/nw), append(rc, oc/nc)
		newW, newC = newW+nw, newC+nc
	}
	return rw, rc, newW, newC
}

// quartileLow is the lower quartile of xs (the element a quarter of the
// way up the sorted values; NaN for none).
func quartileLow(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return math.NaN()
	}
	return s[(len(s)-1)/4]
}

// BenchmarkDecodeLoneAttnTokens decodes the bfloat16 Qwen3-0.6B shape
// switching loneRowAsm after every token (timeTokens: from Sample's
// StopFunc, between forward steps), so neighbouring tokens pair the Go
// attention kernels with the generated ones: per pair the Go token's
// time over the other's (above 1: the generated kernels faster), process
// CPU and wall, over LONEROW_TOKENS tokens (default 96) a decode and
// LONEROW_DECODES decodes (default 4). LONEROW_CONTROL=1 labels the
// tokens but decodes all with the generated kernels. Run with -benchtime 1x.
func BenchmarkDecodeLoneAttnTokens(b *testing.B) {
	rounds, tokens := envInt("LONEROW_DECODES", 4), envInt("LONEROW_TOKENS", 96)
	control := os.Getenv("LONEROW_CONTROL") == "1"
	m := qwen3SmallBF16(b, "lonerow-tokens")
	defer func(v bool) { loneRowAsm = v }(loneRowAsm)
	for b.Loop() {
		l0 := loadAvg()
		cpu, wall, _, _ := pairTokens(b, m, rounds, tokens, func(on bool) { loneRowAsm = on || control })
		k := len(wall)
		fmt.Fprintf(os.Stderr, "decode lone-row attention old/new control=%v (%d pairs): cpu med %.3f q1 %.3f min %.3f | wall med %.3f q1 %.3f min %.3f | load %s -> %s\n",
			control, k, cpu[k/2], cpu[k/4], cpu[0], wall[k/2], wall[k/4], wall[0], l0, loadAvg())
	}
}

// BenchmarkLoneRowAttnColdAB is BenchmarkLoneRowAttnAB with the cache as
// a decode finds it: 28 layers' keys and values (4 KiB pages, as the heap
// gives them), and before each layer's attention a pass over 48 MiB, a
// layer's weights' worth, that evicts them from L2 and L3. Only the
// attention is timed (thread CPU and wall summed over the 28 layers).
// LONEROW_HUGE=1 puts the caches in 2 MiB pages; LONEROW_WARM=1 runs a
// two-position attention after the eviction, so the code and the row's
// small data are warm and only the cache is cold.
func BenchmarkLoneRowAttnColdAB(b *testing.B) {
	defer func(old, w bool) { loneRowAsm, loneTileW = old, w }(loneRowAsm, loneTileW)
	rounds := envInt("LONEROW_ROUNDS", 15)
	huge := os.Getenv("LONEROW_HUGE") == "1" // the caches in 2 MiB pages
	warm := os.Getenv("LONEROW_WARM") == "1"
	c := Config{Shape: models.Shape{Heads: 16, KVHeads: 8, HeadDim: 128}}
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	flush := make([]float32, 48<<20/4)
	for i := range flush {
		flush[i] = float32(i)
	}
	var sink float32
	for _, pos := range []int{16, 64, 250, 1000} {
		b.Run(fmt.Sprintf("pos%d", pos), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			n := pos + 1
			m := &Model{cfg: c}
			ws := &workspace{q: randRows(1, qd, 1), att: randRows(1, qd, 2), scores: make([][]float32, 1)}
			var ks, vs [][]float32
			var all []float32
			if huge { // one 2 MiB-aligned slab advised for huge pages
				tot := 56 * n * kvd
				buf := make([]float32, tot+hugePage/4)
				off := (hugePage - int(uintptr(unsafe.Pointer(&buf[0])))%hugePage) % hugePage / 4
				all = buf[off : off+tot]
				adviseHuge(all)
			}
			for range 28 {
				k, v := flat(randRows(n, kvd, 3)), flat(randRows(n, kvd, 4))
				if huge {
					hk, hv := all[:len(k):len(k)], all[len(k):2*len(k):2*len(k)]
					copy(hk, k)
					copy(hv, v)
					k, v, all = hk, hv, all[2*len(k):]
				}
				ks, vs = append(ks, k), append(vs, v)
			}
			seq := &kvCache{k: ks, v: vs}
			rows := []row{{seq: seq, pos: pos}}
			wseq := &kvCache{k: [][]float32{flat(randRows(2, kvd, 3))}, v: [][]float32{flat(randRows(2, kvd, 4))}}
			wrows := []row{{seq: wseq, pos: 1}}
			run := func(asm bool) (wall, cpu float64) {
				loneRowAsm = asm

				for l := range 28 {
					for i := 0; i < len(flush); i += 16 {
						sink += flush[i]
					}
					if warm { // the code and the row's small data warm, the cache cold
						m.attendRow(ws, wrows, 0, 0, 0, 0, c.KVHeads)
					}
					t0, c0 := time.Now(), threadCPU()
					m.attendRow(ws, rows, 0, l, 0, 0, c.KVHeads)
					wall, cpu = wall+time.Since(t0).Seconds(), cpu+threadCPU()-c0
				}
				return wall, cpu
			}
			for b.Loop() {
				rw, rc, newW, _ := alternateRounds(rounds, run)
				b.ReportMetric(median(rc), "cpu-ratio-med")
				b.ReportMetric(slices.Min(rc), "cpu-ratio-min")
				b.ReportMetric(median(rw), "wall-ratio-med")
				b.ReportMetric(quartileLow(rw), "wall-ratio-q1")
				b.ReportMetric(slices.Min(rw), "wall-ratio-min")
				b.ReportMetric(newW/float64(rounds*28)*1e9, "ns-wall/new-layer")
				b.Logf("pos %d, load %s", pos, loadAvg())
			}
		})
	}
	_ = sink
}
