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
// several (fwdBlockBytes, fwdTokBytes) pairs and tile choices, interleaved in rounds in one
// process so that load from other processes falls on every pair alike; it
// reports each pair's median wall and CPU GFLOP/s over the rounds.
// AVX2_BLOCKS="rowKiB/tokKiB[r][qN[pC]],..." picks them (r:
// fwd2TileCtlReg on; qN: the 4-token tiles with column blocks of N chunks
// and pieces of C columns, else the 2-token ones; a final n: fwd2Put3
// off; default: the current constants with the 2-token tiles and
// with the 4-token ones). AVX2_DTYPE=f32 gives every shape float32
// weights (the training step's), AVX2_M another batch than 128.
func BenchmarkGEMMAVX2Blocks(b *testing.B) {
	type cfg struct {
		rows, toks int
		ctlReg     bool
		block      int // 0: the 2-token tiles
		piece      int
		putRow     bool // fwd2Put3 off
	}
	cfgs := []cfg{{fwdBlockBytes, fwdTokBytes, true, 0, 0, false}, {fwdBlockBytes, fwdTokBytes, true, fwd2TileBlock, fwd2PieceCols, false}}
	if s := os.Getenv("AVX2_BLOCKS"); s != "" {
		cfgs = cfgs[:0]
		for _, f := range strings.Split(s, ",") {
			f, putRow := strings.CutSuffix(f, "n")
			f, q, _ := strings.Cut(f, "q")
			block, piece := 0, fwd2PieceCols
			if q != "" {
				q, p, _ := strings.Cut(q, "p")
				var err error
				if block, err = strconv.Atoi(q); err != nil || block < 1 {
					b.Fatalf("AVX2_BLOCKS %q: want qN with N > 0", q)
				}
				if p != "" {
					if piece, err = strconv.Atoi(p); err != nil || piece < 16 {
						b.Fatalf("AVX2_BLOCKS %q: want pN with N >= 16", p)
					}
				}
			}
			f, reg := strings.CutSuffix(f, "r")
			r, t, _ := strings.Cut(f, "/")
			ri, err1 := strconv.Atoi(r)
			ti, err2 := strconv.Atoi(t)
			if err1 != nil || err2 != nil {
				b.Fatalf("AVX2_BLOCKS %q: want rowKiB/tokKiB", f)
			}
			cfgs = append(cfgs, cfg{ri << 10, ti << 10, reg, block, piece, putRow})
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
	allF32 := os.Getenv("AVX2_DTYPE") == "f32"
	m := 128
	if s := os.Getenv("AVX2_M"); s != "" {
		m, _ = strconv.Atoi(s)
	}
	for _, sh := range shapes {
		w, wb, xs := fwdCase(sh.rows, sh.cols, m, 2)
		mm := w
		if allF32 {
			sh.bf = false
		}
		if sh.bf {
			mm = wb
		}
		ys := rowsOf(make([]float32, m*sh.rows), m, sh.rows)
		flop := 2 * float64(sh.rows*sh.cols*m)
		b.Run(fmt.Sprintf("%s/bf16=%v/M=%d", sh.name, sh.bf, m), func(b *testing.B) {
			defer func(r, t int, c, t4 bool, k, p, tc int, p3 bool) {
				fwdBlockBytes, fwdTokBytes, fwd2TileCtlReg, fwd2Tile4, fwd2TileBlock, fwd2PieceCols, fwd2Tile4Cols, fwd2Put3 = r, t, c, t4, k, p, tc, p3
			}(fwdBlockBytes, fwdTokBytes, fwd2TileCtlReg, fwd2Tile4, fwd2TileBlock, fwd2PieceCols, fwd2Tile4Cols, fwd2Put3)
			fwd2Tile4Cols = 0
			wall := make([][]float64, len(cfgs))
			cpu := make([][]float64, len(cfgs))
			for b.Loop() {
				for range rounds {
					for i, c := range cfgs {
						fwdBlockBytes, fwdTokBytes, fwd2TileCtlReg = c.rows, c.toks, c.ctlReg
						fwd2Tile4, fwd2TileBlock, fwd2PieceCols = c.block > 0, c.block, c.piece
						fwd2Put3 = !c.putRow
						w, c := gemmRound(func() { matMul(mm, xs, ys, false) }, flop, 3, 60*time.Millisecond)
						wall[i], cpu[i] = append(wall[i], w), append(cpu[i], c)
					}
				}
			}
			for i, c := range cfgs {
				slices.Sort(wall[i])
				slices.Sort(cpu[i])
				k := len(wall[i])
				b.Logf("rows %4d KiB toks %4d KiB ctlReg %5v block %2d piece %4d putRow %5v: wall %.1f [%.1f-%.1f] GFLOP/s (%.3f of first)  cpu %.1f [%.1f-%.1f] GFLOP/CPU-s (%.3f)",
					c.rows>>10, c.toks>>10, c.ctlReg, c.block, c.piece, c.putRow, wall[i][k/2], wall[i][0], wall[i][k-1], wall[i][k/2]/wall[0][k/2],
					cpu[i][k/2], cpu[i][0], cpu[i][k-1], cpu[i][k/2]/cpu[0][k/2])
			}
		})
	}
}

// BenchmarkGEMMAVX2TileLadder runs a tile kernel alone on one core over
// weights that fit L1, L2 or neither (the same packed group every call),
// in GFLOP/s: the kernel's ceiling where its weights come from each level.
// tile2 is the 2-token tile (two of the group's vectors), tile4 the
// 4-token one (all four; block: its column block in chunks).
func BenchmarkGEMMAVX2TileLadder(b *testing.B) {
	for _, c := range []struct {
		name        string
		cols, tiles int
	}{{"L1-256x6", 256, 2}, {"L1-1024x6", 1024, 2}, {"L2-1024x60", 1024, 20}, {"L2-1024x120", 1024, 40}, {"L2-2048x60", 2048, 20}, {"L2-3072x30", 3072, 10}, {"L3-1024x480", 1024, 160}} {
		for _, v := range []struct {
			bf, reg bool
			toks    int
			block   int
		}{{false, false, 2, 0}, {false, false, 4, 16}, {false, false, 4, 32}, {false, false, 4, 64}, {true, true, 2, 0}, {true, false, 4, 32}} {
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
			out := make([]float32, 16*c.tiles)
			scratch := fwd2ScratchOf(new([]float32), c.tiles)
			flop := float64(2 * v.toks * rows * c.cols)
			b.Run(fmt.Sprintf("%s/bf16=%v/tile%d/block=%d", c.name, bf, v.toks, v.block), func(b *testing.B) {
				defer func(r bool, k int) { fwd2TileCtlReg, fwd2TileBlock = r, k }(fwd2TileCtlReg, fwd2TileBlock)
				fwd2TileCtlReg, fwd2TileBlock = v.reg, v.block
				c0 := processCPU()
				for b.Loop() {
					if v.toks == 4 {
						fwd2Tiles4(mm, xp, 0, c.tiles, nil, out, scratch)
					} else {
						fwd2Tiles(mm, xp, 0, c.tiles, nil, out)
					}
				}
				b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(flop*float64(b.N)/(processCPU()-c0)/1e9, "GFLOP/CPU-s")
			})
		}
	}
}

// BenchmarkGEMMAVX2TilePair times the 2-token tile (twice, for the four
// vectors of a group) and the 4-token tile on the same group and weights
// in alternating short rounds on one core, and reports the median of the
// per-round ratios (4-token speed over 2-token) with its range, so that
// load from other processes falls on both alike. The weights are one row
// block (fwdBlockBytes, in L2) as the product gives the kernels, or one
// tile (in L1); AVX2_TILEBLOCK sets fwd2TileBlock.
func BenchmarkGEMMAVX2TilePair(b *testing.B) {
	rounds := 401
	if s := os.Getenv("AVX2_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	for _, cols := range []int{1024, 2048, 3072} {
		for _, v := range []struct{ bf, l1 bool }{{false, true}, {false, false}, {true, false}} {
			bf := v.bf
			tiles := min(fwd2MaxTiles, fwdBlockBytes/(cols*4)/3)
			if bf {
				tiles = min(fwd2MaxTiles, fwdBlockBytes/(cols*2)/3)
			}
			if v.l1 {
				tiles = 1
			}
			w, wb, _ := fwdCase(3*tiles, cols, 1, 4)
			mm := w
			if bf {
				mm = wb
			}
			xp := make([]float32, packedLen(cols))
			for i := range xp {
				xp[i] = float32(i%7) * 0.25
			}
			out := make([]float32, 16*tiles)
			scratch := fwd2ScratchOf(new([]float32), tiles)
			flop := float64(2 * 4 * 3 * tiles * cols)
			b.Run(fmt.Sprintf("K=%d/bf16=%v/tiles=%d", cols, bf, tiles), func(b *testing.B) {
				defer func(k int) { fwd2TileBlock = k }(fwd2TileBlock)
				if s := os.Getenv("AVX2_TILEBLOCK"); s != "" {
					fwd2TileBlock, _ = strconv.Atoi(s)
				}
				var r2, r4, ratio []float64
				reps := max(1, 20<<20/int(flop))
				for b.Loop() {
					for range rounds {
						t0 := time.Now()
						for range reps {
							fwd2Tiles(mm, xp, 0, tiles, nil, out)
							fwd2Tiles(mm, xp[32:], 0, tiles, nil, out)
						}
						t1 := time.Now()
						for range reps {
							fwd2Tiles4(mm, xp, 0, tiles, nil, out, scratch)
						}
						t2 := time.Now()
						d2, d4 := t1.Sub(t0).Seconds(), t2.Sub(t1).Seconds()
						r2 = append(r2, flop*float64(reps)/d2/1e9)
						r4 = append(r4, flop*float64(reps)/d4/1e9)
						ratio = append(ratio, d2/d4)
					}
				}
				for _, s := range [][]float64{r2, r4, ratio} {
					slices.Sort(s)
				}
				k := len(ratio)
				b.ReportMetric(r2[k/2], "GFLOP/s-tile2")
				b.ReportMetric(r4[k/2], "GFLOP/s-tile4")
				b.ReportMetric(r2[k-1], "best-tile2")
				b.ReportMetric(r4[k-1], "best-tile4")
				b.ReportMetric(ratio[k/2], "x-tile4")
				b.Logf("tile4/tile2 median %.3f [quartiles %.3f-%.3f], best %.1f / %.1f GFLOP/s = %.3f, over %d rounds",
					ratio[k/2], ratio[k/4], ratio[3*k/4], r4[k-1], r2[k-1], r4[k-1]/r2[k-1], k)
			})
		}
	}
}
