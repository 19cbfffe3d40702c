//go:build goexperiment.simd && amd64

package engine

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
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
// same keys and values, and beside the read probe LONGATTN_READ
// (default S8T1-1K) run as attention is (layerProbe): how far attention
// is from reading its bytes as fast as the machine reads them. The
// fastest probe is the best of every probe over all the layers' bytes in
// one pass, with no layer's barrier or eviction between; the layered
// probe pays what attention pays there, so attention over it is the
// kernels' own share of the gap.
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
		lp, lname := layerProbe(m, seqs, p)
		fmt.Fprintf(os.Stderr, "attn alone R=%d P=%d: %.1f GB/s (%.2f ms); probe over its bytes %.1f GB/s (%s); %s layered %.1f GB/s, attention %.3f of it | load %s\n",
			r, p, bytes/a/1e9, 1e3*a, bw/1e9, name, lname, bytes/lp/1e9, lp/a, loadAvg())
	}
}

// layerProbe is longAttention with the read probe LONGATTN_READ (default
// S8T1-1K) in place of attention: each layer's units (attnSplit's, or a
// row's KV head each) claimed by the cores in turn after the eviction,
// each unit reading its share of its row's layer keys and values (a
// contiguous run of the same size: units of some KV heads read that
// fraction of each position's). The wall seconds and the probe's name.
func layerProbe(m *Model, seqs []*kvCache, pos int) (float64, string) {
	c := m.cfg
	name := cmp.Or(os.Getenv("LONGATTN_READ"), "S8T1-1K")
	var read func([]uint64) uint64
	for _, p := range readProbes() {
		if p.name == name {
			read = p.read
		}
	}
	if read == nil {
		panic("LONGATTN_READ=" + name + ": no such read probe (readProbes)")
	}
	rows := make([]row, len(seqs))
	for s, seq := range seqs {
		rows[s] = row{seq: seq, token: 1, pos: pos}
	}
	f := &fuseState{m: m, rows: rows}
	split, units := f.attnSplit(0), c.KVHeads*len(rows)
	if split.rows > 0 {
		units = split.units()
	}
	kvd := c.KVHeads * c.HeadDim
	n := (pos + 1) * kvd
	var total time.Duration
	for l := range c.Layers {
		total += coldUnits(runtime.GOMAXPROCS(0), units, func(_, k int) {
			i, kv0, kv1 := k%len(rows), k/len(rows), k/len(rows)+1 // a row's KV head (longAttention's order)
			if split.rows > 0 {
				i, kv0, kv1 = split.unit(k)
			}
			a, b := n*kv0/c.KVHeads&^31, n*kv1/c.KVHeads&^31
			for _, x := range [][]float32{seqs[i].k[l], seqs[i].v[l]} {
				s := x[a:b]
				evictSink += read(unsafe.Slice((*uint64)(unsafe.Pointer(&s[0])), len(s)/2))
			}
		})
	}
	return total.Seconds(), name
}
