package engine

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkGEMMAVX2Blocks measures the AVX2 product at M=128 under
// several (fwdBlockBytes, fwdTokBytes) pairs, interleaved in rounds in one
// process so that load from other processes falls on every pair alike; it
// reports each pair's median wall and CPU GFLOP/s over the rounds.
// AVX2_BLOCKS="rowKiB/tokKiB[r],..." picks them (r: fwd2TileCtlReg on;
// default: the current constants and 128 KiB rows, each with and without).
func BenchmarkGEMMAVX2Blocks(b *testing.B) {
	type cfg struct {
		rows, toks int
		ctlReg     bool
	}
	cfgs := []cfg{{fwdBlockBytes, fwdTokBytes, false}, {fwdBlockBytes, fwdTokBytes, true}, {128 << 10, 768 << 10, false}, {128 << 10, 768 << 10, true}}
	if s := os.Getenv("AVX2_BLOCKS"); s != "" {
		cfgs = cfgs[:0]
		for _, f := range strings.Split(s, ",") {
			f, reg := strings.CutSuffix(f, "r")
			r, t, _ := strings.Cut(f, "/")
			ri, err1 := strconv.Atoi(r)
			ti, err2 := strconv.Atoi(t)
			if err1 != nil || err2 != nil {
				b.Fatalf("AVX2_BLOCKS %q: want rowKiB/tokKiB", f)
			}
			cfgs = append(cfgs, cfg{ri << 10, ti << 10, reg})
		}
	}
	rounds := 7
	if s := os.Getenv("AVX2_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	shapes := []struct {
		name       string
		rows, cols int
		bf         bool
	}{{"q_proj", 2048, 1024, false}, {"kv_proj", 1024, 1024, true}, {"o_proj", 1024, 2048, true}, {"gate_up", 3072, 1024, true}, {"down", 1024, 3072, true}}
	for _, sh := range shapes {
		w, wb, xs := fwdCase(sh.rows, sh.cols, 128, 2)
		mm := w
		if sh.bf {
			mm = wb
		}
		ys := rowsOf(make([]float32, 128*sh.rows), 128, sh.rows)
		flop := 2 * float64(sh.rows*sh.cols*128)
		b.Run(fmt.Sprintf("%s/bf16=%v/M=128", sh.name, sh.bf), func(b *testing.B) {
			defer func(r, t int, c bool) { fwdBlockBytes, fwdTokBytes, fwd2TileCtlReg = r, t, c }(fwdBlockBytes, fwdTokBytes, fwd2TileCtlReg)
			wall := make([][]float64, len(cfgs))
			cpu := make([][]float64, len(cfgs))
			for b.Loop() {
				for range rounds {
					for i, c := range cfgs {
						fwdBlockBytes, fwdTokBytes, fwd2TileCtlReg = c.rows, c.toks, c.ctlReg
						matMul(mm, xs, ys, false)
						n, t0, c0 := 0, time.Now(), processCPU()
						for n < 3 || time.Since(t0) < 60*time.Millisecond {
							matMul(mm, xs, ys, false)
							n++
						}
						wall[i] = append(wall[i], flop*float64(n)/time.Since(t0).Seconds()/1e9)
						cpu[i] = append(cpu[i], flop*float64(n)/(processCPU()-c0)/1e9)
					}
				}
			}
			for i, c := range cfgs {
				slices.Sort(wall[i])
				slices.Sort(cpu[i])
				k := len(wall[i])
				b.Logf("rows %4d KiB toks %4d KiB ctlReg %5v: wall %.1f [%.1f-%.1f] GFLOP/s (%.3f of first)  cpu %.1f [%.1f-%.1f] GFLOP/CPU-s (%.3f)",
					c.rows>>10, c.toks>>10, c.ctlReg, wall[i][k/2], wall[i][0], wall[i][k-1], wall[i][k/2]/wall[0][k/2],
					cpu[i][k/2], cpu[i][0], cpu[i][k-1], cpu[i][k/2]/cpu[0][k/2])
			}
		})
	}
}

// BenchmarkGEMMAVX2TileLadder runs the 2×3 tile kernel alone on one core
// over weights that fit L1, L2 or neither (the same pair of packed vectors
// every call), in GFLOP/s: the kernel's ceiling where its weights come
// from each level.
func BenchmarkGEMMAVX2TileLadder(b *testing.B) {
	for _, c := range []struct {
		name        string
		cols, tiles int
	}{{"L1-256x6", 256, 2}, {"L1-1024x6", 1024, 2}, {"L2-1024x60", 1024, 20}, {"L2-1024x120", 1024, 40}, {"L3-1024x480", 1024, 160}} {
		for _, v := range []struct{ bf, reg bool }{{false, false}, {true, false}, {true, true}} {
			bf := v.bf
			rows := 3 * c.tiles
			w, wb, _ := fwdCase(rows, c.cols, 1, 4)
			mm := w
			if bf {
				mm = wb
			}
			xp := make([]float32, packedLen(c.cols))
			for i := range xp {
				xp[i] = float32(i%7) * 0.25
			}
			out := make([]float32, 8*c.tiles)
			flop := float64(2 * 2 * rows * c.cols)
			b.Run(fmt.Sprintf("%s/bf16=%v/ctlReg=%v", c.name, bf, v.reg), func(b *testing.B) {
				defer func(r bool) { fwd2TileCtlReg = r }(fwd2TileCtlReg)
				fwd2TileCtlReg = v.reg
				c0 := processCPU()
				for b.Loop() {
					fwd2Tiles(mm, xp, 0, c.tiles, nil, out)
				}
				b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(flop*float64(b.N)/(processCPU()-c0)/1e9, "GFLOP/CPU-s")
			})
		}
	}
}
