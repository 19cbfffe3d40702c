//go:build goexperiment.simd && amd64

package engine

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rowsSwitches are the package variables BenchmarkDecodeRows can switch
// between steps (ROWS_SWITCH): each sets the variant on (new) or off
// (old).
var rowsSwitches = map[string]func(on bool){
	"control": func(bool) {},
	"pfwide":  func(on bool) { fwdPrefetchWide = on },
	"even":    func(on bool) { fwdPrefetchEven = on },
	"bf16pf":  func(on bool) { bf16AVXPrefetch = on },
	"multi":   func(on bool) { fwdRowMulti = on },
	"tile23":  func(on bool) { fwdRowsTile = on },
	"tilepad": func(on bool) { fwdRowsTilePad = on },
	"all": func(on bool) { // every switch above and below together
		fwdPrefetchWide, fwdPrefetchEven, bf16AVXPrefetch, fwdRowMulti, fuseMaxRows = on, on, on, on, 3
		fwdRowsTile, fwdRowsTilePad, fwdRowsTilePadOne, fwdPrefetchEvenLines = on, on, on, 4
		if on {
			fuseMaxRows, fwdPrefetchEvenLines = 16, 6
		}
	},
	"padone": func(on bool) { fwdRowsTilePadOne = on },
	"pf6": func(on bool) { // six lines of the next tile an even wide step against four
		fwdPrefetchEvenLines = 4
		if on {
			fwdPrefetchEvenLines = 6
		}
	},
	"fuse16": func(on bool) { // fused steps of 4-16 rows against 3 at most
		fuseMaxRows = 3
		if on {
			fuseMaxRows = 16
		}
	},
}

// BenchmarkDecodeRows decodes steps of R rows (R sequences, one token
// each, every row wanting logits: a group sampled from one prompt) on the
// Qwen3-0.6B shape, bfloat16 weights on the float32 compute path, or on
// the bf16 compute path with ROWS_DTYPE=bf16-compute, or the model
// ROWS_MODEL names (f32: the 0.6B shape in float32; or a built-in tiny
// model's name, such as tiny-llama or tiny-qwen3), for each R of
// ROWS_R (default "2,4,8,16"), ROWS_STEPS steps each (default 24, at
// positions 1 on).
//
// Without ROWS_SWITCH it sets each step against the roofline
// max(bytes / read bandwidth, 2·R·params / compute peak): the read
// bandwidth the fastest reading of the step's own matrices by every read
// variant (variantReads over decodeMatrixWords), the peak the 512-bit
// FMA loop on every core (fmaProbe; on the bf16 compute path the
// VDPBF16PS loop, avxBF16PeakReg), both in wall time and taken before and
// after each R's steps (the better of the two). It prints the median
// step's share of that roofline and of each of its two terms.
//
// With ROWS_SWITCH=name (a key of rowsSwitches) it alternates the variant
// off (old) and on (new) step by step, each side with its own caches and
// workspace, the order within a pair alternating, and prints per R the
// old step's wall and process CPU over the new one's: median, lower
// quartile and minimum. Run with -benchtime 1x.
func BenchmarkDecodeRows(b *testing.B) {
	bc := os.Getenv("ROWS_DTYPE") == "bf16-compute"
	if bc && !bf16Compute() {
		b.Skip("this CPU has no AVX512-BF16: no bf16 compute path")
	}
	var m *Model
	dtype := "bf16"
	switch name := os.Getenv("ROWS_MODEL"); name {
	case "":
		m = qwen3SmallBF16(b, "decode-rows")
	case "f32":
		m, dtype = qwen3SmallOf(b, "decode-rows", "f32"), "f32"
	default:
		if !strings.Contains(name, "/") {
			name = "tinker-local/" + name
		}
		m, dtype = mustLoad(b, name), name
	}
	if bc {
		m.w.withBF16Compute()
		dtype = "bf16-compute"
	}
	var rs []int
	for _, f := range strings.Split(cmp.Or(os.Getenv("ROWS_R"), "2,4,8,16"), ",") {
		r, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || r < 1 {
			b.Fatalf("ROWS_R=%q: want a comma-separated list of row counts, such as 2,4,8,16", os.Getenv("ROWS_R"))
		}
		rs = append(rs, r)
	}
	steps := envInt("ROWS_STEPS", 24)
	key := os.Getenv("ROWS_SWITCH")
	set, paired := rowsSwitches[key]
	if key != "" && !paired {
		b.Fatalf("ROWS_SWITCH=%s: none such; set one of the keys of rowsSwitches", key)
	}
	for b.Loop() {
		for _, r := range rs {
			if paired {
				decodeRowsPaired(b, m, dtype, key, r, steps, set)
			} else {
				decodeRowsRoofline(b, m, dtype, bc, r, steps)
			}
		}
	}
}

// rowsStep is one decoding step of every sequence of seqs at position p
// on ws: its wall and process CPU time in seconds.
func rowsStep(m *Model, ws *workspace, seqs []*kvCache, p int) (wall, cpu float64) {
	rows := make([]row, len(seqs))
	for s, seq := range seqs {
		rows[s] = row{seq: seq, token: (1000 + 37*p + 11*s) % m.cfg.VocabSize, pos: p, logits: true}
	}
	c0, t0 := processCPU(), time.Now()
	m.forward(ws, rows)
	return time.Since(t0).Seconds(), processCPU() - c0
}

func newSeqs(m *Model, r, capacity int) []*kvCache {
	seqs := make([]*kvCache, r)
	for i := range seqs {
		seqs[i] = m.newCache(capacity)
	}
	return seqs
}

// decodeRowsRoofline is BenchmarkDecodeRows' roofline figures for r rows.
func decodeRowsRoofline(b *testing.B, m *Model, dtype string, bc bool, r, steps int) {
	params := matrixParams(m.cfg)
	bytes, flop := 2*params, 2*float64(r)*params
	if dtype != "bf16" && dtype != "bf16-compute" {
		bytes = modelBytes(m) // float32 weights, or a tiny model's
	}
	bufs := decodeMatrixWords(m)
	peak := func() float64 {
		if bc {
			return bf16PeakWall()
		}
		w, _, _ := widestFMAPeak()
		return w * 1e9
	}
	bw0, pk0 := readBest(bufs), peak()
	ws, seqs := &workspace{}, newSeqs(m, r, steps+2)
	rowsStep(m, ws, seqs, 0) // warms the workspace and caches
	var wall, cpu []float64
	for p := 1; p <= steps; p++ {
		w, c := rowsStep(m, ws, seqs, p)
		wall, cpu = append(wall, w), append(cpu, c)
	}
	bw, pk := max(bw0, readBest(bufs)), max(pk0, peak())
	tRead, tFlop := bytes/bw, flop/pk
	t := median(wall)
	fmt.Fprintf(os.Stderr, "rows %s R=%d: step %.2f ms wall (cpu %.2f ms) | roofline %.2f ms (%s) = %.1f%% | read %.1f GB/s -> %.1f%%, peak %.0f GFLOP/s -> %.1f%% | %.1f GB/s, %.0f GFLOP/s | load %s\n",
		dtype, r, 1e3*t, 1e3*median(cpu), 1e3*max(tRead, tFlop), map[bool]string{true: "read", false: "compute"}[tRead >= tFlop],
		100*max(tRead, tFlop)/t, bw/1e9, 100*tRead/t, pk/1e9, 100*tFlop/t, bytes/t/1e9, flop/t/1e9, loadAvg())
}

// readBest is the fastest reading of bufs by any read variant, bytes/s.
func readBest(bufs [][]uint64) float64 {
	bw, _ := fastestRead(bufs)
	return bw
}

// bf16PeakWall is VDPBF16PS's peak on every core in flop/s of wall time
// (avxBF16PeakReg: 24 chains, sources in registers), the best of three.
func bf16PeakWall() float64 {
	const iters = 2_000_000
	procs := runtime.GOMAXPROCS(0)
	best := 0.0
	for range 3 {
		var wg sync.WaitGroup
		t0 := time.Now()
		for range procs {
			wg.Go(func() {
				x := make([]uint16, 32)
				avxBF16PeakReg(&x[0], iters)
			})
		}
		wg.Wait()
		best = max(best, 24*64*iters*float64(procs)/time.Since(t0).Seconds())
	}
	return best
}

// decodeRowsPaired is BenchmarkDecodeRows' step-paired comparison of
// the variant set switches, for r rows.
func decodeRowsPaired(b *testing.B, m *Model, dtype, key string, r, steps int, set func(on bool)) {
	defer set(true)
	var seqs [2][]*kvCache
	var wss [2]*workspace
	for v := range seqs {
		wss[v], seqs[v] = &workspace{}, newSeqs(m, r, steps+2)
	}
	step := func(v, p int) (float64, float64) {
		set(v == 1)
		return rowsStep(m, wss[v], seqs[v], p)
	}
	var pr pairRatios
	l0 := loadAvg()
	pr.stepPairs(steps, step)
	fmt.Fprintf(os.Stderr, "rows %s R=%d %s old/new (%d pairs): %s | load %s -> %s | step ms old %.2f new %.2f\n",
		dtype, r, key, len(pr.wall), pr.figures(), l0, loadAvg(), 1e3*median(pr.tOld), 1e3*median(pr.tNew))
}
