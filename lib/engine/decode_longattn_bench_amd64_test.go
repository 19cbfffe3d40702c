//go:build goexperiment.simd && amd64

package engine

import (
	"cmp"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// BenchmarkLongAttnPaired times attention alone (longAttention: every
// layer's units over the cores, the caches evicted before each layer)
// of R rows at position P with LONG_SWITCH's variant off (old) and on
// (new) in alternation, the order within a pair alternating, over one
// set of caches (LONGATTN_PAIRS pairs, default 12), and prints the old
// pass's wall and process CPU over the new one's: median, lower
// quartile and minimum. Attention alone moves less with the products
// than a step does, so a change to it shows here before a step-paired
// run (BenchmarkDecodeLong) confirms it. LONG_R and LONG_POS as
// BenchmarkDecodeLong's (default 4 and 2048). Run with -benchtime 1x.
func BenchmarkLongAttnPaired(b *testing.B) {
	key := os.Getenv("LONG_SWITCH")
	set, ok := longSwitches[key]
	if !ok {
		b.Fatalf("LONG_SWITCH=%q: set one of the keys of longSwitches", key)
	}
	m := qwen3SmallBF16(b, "decode-long")
	rs, ps := envInts(b, "LONG_R", "4"), envInts(b, "LONG_POS", "2048")
	pairs := envInt("LONGATTN_PAIRS", 12)
	for b.Loop() {
		for _, r := range rs {
			for _, p := range ps {
				ws, seqs := &workspace{}, longSeqs(m, r, p, 2, false)
				rowsStep(m, ws, seqs, p) // the rows' q in ws.q, position p written
				if os.Getenv("LONGATTN_PROBE") == "1" {
					longAttnProbe(m, ws, seqs, r, p)
					continue
				}
				pass := func(v, _ int) (float64, float64) {
					set(v == 1)
					c0 := processCPU()
					w := longAttention(m, ws, seqs, p)
					return w, processCPU() - c0
				}
				var pr pairRatios
				l0 := loadAvg()
				pr.stepPairs(pairs, pass)
				set(true)
				fmt.Fprintf(os.Stderr, "attn alone R=%d P=%d %s old/new (%d pairs): %s | load %s -> %s | ms old %.2f new %.2f\n",
					r, p, key, len(pr.wall), pr.figures(), l0, loadAvg(), 1e3*median(pr.tOld), 1e3*median(pr.tNew))
			}
		}
	}
}

// envInts is the comma-separated positive integers of environment
// variable key, def when unset.
func envInts(b *testing.B, key, def string) []int {
	var xs []int
	for _, f := range strings.Split(cmp.Or(os.Getenv(key), def), ",") {
		x, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || x < 1 {
			b.Fatalf("%s=%q: want a comma-separated list of positive integers, such as %s", key, os.Getenv(key), def)
		}
		xs = append(xs, x)
	}
	return xs
}

// longAttnProbe prints, in four rounds, attention alone's read rate of
// the rows' caches beside the fastest read probe (readProbes) over the
// same keys and values: how far attention is from reading its bytes as
// fast as the machine reads them.
func longAttnProbe(m *Model, ws *workspace, seqs []*kvCache, r, p int) {
	kvd := m.cfg.KVHeads * m.cfg.HeadDim
	var bufs [][]uint64
	for l := range m.cfg.Layers {
		for _, seq := range seqs {
			for _, x := range [][]float32{seq.k[l][:(p+1)*kvd], seq.v[l][:(p+1)*kvd]} {
				bufs = append(bufs, unsafe.Slice((*uint64)(unsafe.Pointer(&x[0])), len(x)/2))
			}
		}
	}
	bytes := longCacheBytes(m, r, p)
	for range 4 {
		a := longAttention(m, ws, seqs, p)
		bw, name := fastestRead(bufs)
		fmt.Fprintf(os.Stderr, "attn alone R=%d P=%d: %.1f GB/s (%.2f ms); probe over its bytes %.1f GB/s (%s) | load %s\n",
			r, p, bytes/a/1e9, 1e3*a, bw/1e9, name, loadAvg())
	}
}
