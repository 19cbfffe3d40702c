//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"
)

// longSwitches are the package variables BenchmarkDecodeLong can switch
// between steps (LONG_SWITCH): each sets the variant on (new) or off
// (old).
var longSwitches = map[string]func(on bool){
	"control": func(bool) {},
	"share":   func(on bool) { fuseAttnShare = on },
	"keynext": func(on bool) { bf16AttnKeyNext = on },
	"keymin": func(on bool) { // the next-block prefetch from LONG_MIN blocks (new, default 8) against 16
		bf16KeyNextMinBlocks = 16
		if on {
			bf16KeyNextMinBlocks = envInt("LONG_MIN", 8)
		}
	},
	"huge":    func(bool) {}, // the new side's caches in huge pages (decodeLongPaired)
	"sumspf":  func(on bool) { loneSumsPF = on },
	"blocked": func(on bool) { fuseAttnBlocked = on },
	"rowsblk": func(on bool) { attnBlockedRows = on }, // steps past fuseMaxRows rows
	"blk32": func(on bool) { // blocks of 32 positions (new) against 16
		loneBlockRows = 16
		if on {
			loneBlockRows = 32
		}
	},
	"minpos": func(on bool) { // blocked units from position LONG_MIN (new, default 256) against 512
		attnBlockedMinPos = 512
		if on {
			attnBlockedMinPos = envInt("LONG_MIN", 256)
		}
	},
	"blk8": func(on bool) { // blocks of 8 positions (new) against 16
		loneBlockRows = 16
		if on {
			loneBlockRows = 8
		}
	},
	"all": func(on bool) { // every switch above: main's attention against this branch's
		fuseAttnShare, loneSumsPF, fuseAttnBlocked, attnBlockedRows = on, on, on, on
	},
	// longattn's keys (helper 1).
	"whole": func(on bool) { attnWholeRows = on },
}

// BenchmarkDecodeLong decodes steps of R rows (R sequences, one token
// each, every row wanting logits: an RL group) at long positions, where
// the key/value cache is a large part of a step's reads: the 0.6B shape
// with bfloat16 weights on the float32 compute path (LONG_MODEL=f32: in
// float32; LONG_DTYPE=bf16-compute: the bf16 compute path), for each R
// of LONG_R (default "1,4,16") and each start position P of LONG_POS
// (default "512,1024,2048"), LONG_STEPS steps (default 16) from P on.
// Each sequence's cache is filled to P with seeded random keys and
// values of about a normed key's and a value's scale (a prefill of 16 ×
// 2048 tokens would take too long); the steps attend over them as over a
// prefilled prompt.
//
// Without LONG_SWITCH it prints the median step against the roofline:
// (the weights' bytes + every row's cache bytes read that step) ÷ the
// read probe (the fastest reading of the step's own matrices,
// readBest), beside the compute term (2·R·params + attention's
// multiply-adds, ÷ the 512-bit FMA loop's peak); and attention alone:
// the same steps' attention over every layer and row without the
// products (KV heads spread over the cores as units, cold caches; on the
// bf16 compute path a row's KV head a unit over its packed bfloat16
// cache, attendBF16), its
// share of the step's wall time and the cache bytes it read a second.
//
// With LONG_SWITCH=name (a key of longSwitches) it alternates the
// variant off (old) and on (new) step by step, the order within a pair
// alternating, and prints per (R, P) the old step's wall and process CPU
// over the new one's: median, lower quartile and minimum. Both sides
// decode over one set of caches (each writes the same bits at each
// position, and at these sizes nothing of a cache stays in L3 between
// steps). LONG_MEM_GB=N gives each side its own caches when both fit in
// N GB, which can favour a side: LONG_SWITCH=control read 0.955 (wall)
// at R=16 P=1024 on the bf16 compute path that way. Run with
// -benchtime 1x.
func BenchmarkDecodeLong(b *testing.B) {
	bc := os.Getenv("LONG_DTYPE") == "bf16-compute"
	if bc && !bf16Compute() {
		b.Skip("this CPU has no AVX512-BF16: no bf16 compute path")
	}
	dtype := "bf16"
	var m *Model
	if os.Getenv("LONG_MODEL") == "f32" {
		m, dtype = qwen3SmallOf(b, "decode-long", "f32"), "f32"
	} else {
		m = qwen3SmallBF16(b, "decode-long")
	}
	if bc {
		m.w.withBF16Compute()
		dtype = "bf16-compute"
	}
	rs, ps := envInts(b, "LONG_R", "1,4,16"), envInts(b, "LONG_POS", "512,1024,2048")
	steps := envInt("LONG_STEPS", 16)
	key := os.Getenv("LONG_SWITCH")
	set, paired := longSwitches[key]
	if key != "" && !paired {
		b.Fatalf("LONG_SWITCH=%s: none such; set one of the keys of longSwitches", key)
	}
	for b.Loop() {
		for _, r := range rs {
			for _, p := range ps {
				if paired {
					decodeLongPaired(m, dtype, key, r, p, steps, set)
				} else {
					decodeLongRoofline(m, dtype, r, p, steps)
				}
				debug.FreeOSMemory() // the next configuration's caches in their place
			}
		}
	}
}

// longSeqs are r sequences whose caches hold p positions of seeded
// random keys and values, with room for steps more.
func longSeqs(m *Model, r, p, steps int, huge bool) []*kvCache {
	seqs := newSeqs(m, r, p+steps+2)
	var wg sync.WaitGroup
	for s, seq := range seqs {
		if huge {
			var slab hugeSlab
			for l := range seq.k {
				seq.k[l] = hugeSlabAlloc[float32](&slab, len(seq.k[l]))
				seq.v[l] = hugeSlabAlloc[float32](&slab, len(seq.v[l]))
			}
		}
		for l := range seq.k {
			wg.Go(func() {
				// Keys are q/k-normed and roped: elements of about unit
				// scale, so scores spread over a few units; values smaller.
				fillUniform(seq.k[l][:p*seq.kw], uint64(1+s*1000+l), 1.7)
				fillUniform(seq.v[l][:p*seq.vw], uint64(7+s*1000+l), 0.5)
			})
		}
		seq.n = p
	}
	wg.Wait()
	return seqs
}

// fillUniform fills xs with uniform values in (-a, a) from seed.
func fillUniform(xs []float32, seed uint64, a float32) {
	x := seed*0x9e3779b97f4a7c15 | 1
	for i := range xs {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		xs[i] = (float32(x>>40)/(1<<24)*2 - 1) * a
	}
}

// longCacheBytes is the cache bytes r rows at position pos read in one
// step (every layer's keys and values of positions 0..pos).
func longCacheBytes(m *Model, r, pos int) float64 {
	kw, vw := m.cfg.cacheWidths()
	return float64(r) * float64(pos+1) * float64(m.cfg.Layers) * float64(kw+vw) * 4
}

// decodeLongRoofline is BenchmarkDecodeLong's roofline figures for r rows
// from position p.
func decodeLongRoofline(m *Model, dtype string, r, p, steps int) {
	c := m.cfg
	params := matrixParams(c)
	wbytes := 2 * params
	if dtype == "f32" {
		wbytes = modelBytes(m)
	}
	bufs := decodeMatrixWords(m)
	peak := func() float64 { w, _, _ := widestFMAPeak(); return w * 1e9 }
	bw0, pk0 := readBest(bufs), peak()
	ws, seqs := &workspace{}, longSeqs(m, r, p, steps, os.Getenv("LONG_HUGE") == "1")
	rowsStep(m, ws, seqs, p) // warms the workspace (and packs the bf16 path's cache)
	var wall, cpu, attn, share []float64
	var roof, tRead, tFlop float64
	for s := 1; s <= steps; s++ {
		pos := p + s
		w, cu := rowsStep(m, ws, seqs, pos)
		wall, cpu = append(wall, w), append(cpu, cu)
		a := longAttention(m, ws, seqs, pos)
		attn = append(attn, a)
		share = append(share, a/w)
	}
	bw, pk := max(bw0, readBest(bufs)), max(pk0, peak())
	mid := p + (steps+1)/2
	cbytes := longCacheBytes(m, r, mid)
	if dtype == "bf16-compute" {
		cbytes /= 2 // its attention reads the cache's bfloat16 copy
	}
	aflop := 4 * float64(r) * float64(mid+1) * float64(c.Layers*c.Heads*c.HeadDim)
	tRead, tFlop = (wbytes+cbytes)/bw, (2*float64(r)*params+aflop)/pk
	roof = max(tRead, tFlop)
	t := median(wall)
	fmt.Fprintf(os.Stderr, "long %s R=%d P=%d: step %.2f ms wall (cpu %.2f) | cache %.0f MB + weights %.0f MB | roofline %.2f ms (%s) = %.1f%% | read %.1f GB/s, %.1f%% of it; compute %.1f%% | attention alone %.2f ms = %.1f%% of the step, cache %.1f GB/s | load %s\n",
		dtype, r, p, 1e3*t, 1e3*median(cpu), cbytes/1e6, wbytes/1e6, 1e3*roof,
		map[bool]string{true: "read", false: "compute"}[tRead >= tFlop], 100*roof/t,
		bw/1e9, 100*tRead/t, 100*tFlop/t, 1e3*median(attn), 100*median(share), cbytes/median(attn)/1e9, loadAvg())
}

// longAttention times the attention alone of the rows at position pos
// (after the step that wrote it) over every layer, its units (one row's
// KV head, or a fused fork's blocked units: attnSplit) claimed by every
// core in turn as a fused fork's are, with a
// pass over a 48 MiB buffer before each layer so that the caches come
// from memory as in a step: the wall seconds of the attention only.
func longAttention(m *Model, ws *workspace, seqs []*kvCache, pos int) float64 {
	c := m.cfg
	rows := make([]row, len(seqs))
	for s, seq := range seqs {
		rows[s] = row{seq: seq, token: 1, pos: pos}
	}
	procs := runtime.GOMAXPROCS(0)
	ws.scores = growTo(ws.scores, procs)
	if len(ws.q) < len(rows) || len(ws.att) < len(rows) {
		panic("longAttention: the step left no query rows")
	}
	f := &fuseState{m: m, rows: rows}
	bf := m.bf16Attention(0) // the bf16 path's packed cache, a row's KV head a unit (attendBF16)
	split, units := f.attnSplit(0), c.KVHeads*len(rows)
	if split.rows > 0 {
		units = split.units()
	}
	var total time.Duration
	for l := range c.Layers {
		total += coldUnits(procs, units, func(w, k int) {
			if split.rows > 0 { // a fused fork's blocked units (attendUnits)
				i, kv0, kv1 := split.unit(k)
				m.attendRowBlocked(ws, rows, i, l, w, kv0, kv1)
				return
			}
			kvh, i := k/len(rows), k%len(rows)
			if bf {
				bw := bf16WorkPool.Get().(*bf16AttnWork)
				m.attendBF16(ws, rows, bf16Unit{i: i, n: 1, kvh: kvh, kv: &rows[i].seq.bf16.kv[l][kvh]}, l, bw)
				bf16WorkPool.Put(bw)
				return
			}
			m.attendRow(ws, rows, i, l, w, kvh, kvh+1)
		})
	}
	return total.Seconds()
}

// coldUnits evicts L2 and L3 (longEvict), then has procs workers claim
// units 0..units-1 in turn, as a fused fork's cores do, running do(w, k)
// for worker w and unit k: the wall time from the claims' start.
func coldUnits(procs, units int, do func(w, k int)) time.Duration {
	var sink uint64
	for _, x := range longEvict() {
		sink += x
	}
	evictSink += sink
	return hotUnits(procs, units, do)
}

// hotUnits has procs workers claim units 0..units-1 in turn, running
// do(w, k) for worker w and unit k: the wall time from the claims' start
// (coldUnits without the eviction before).
func hotUnits(procs, units int, do func(w, k int)) time.Duration {
	var next sync.Mutex
	u := 0
	t0 := time.Now()
	var wg sync.WaitGroup
	for w := range procs {
		wg.Go(func() {
			for {
				next.Lock()
				k := u
				u++
				next.Unlock()
				if k >= units {
					return
				}
				do(w, k)
			}
		})
	}
	wg.Wait()
	return time.Since(t0)
}

var (
	evictBuf  []uint64
	evictSink uint64
)

// longEvict is a 48 MiB buffer a pass over which evicts L2 and L3.
func longEvict() []uint64 {
	if evictBuf == nil {
		evictBuf = make([]uint64, 48<<20/8)
		for i := range evictBuf {
			evictBuf[i] = uint64(i)
		}
	}
	return evictBuf
}

// decodeLongPaired is BenchmarkDecodeLong's step-paired comparison of the
// variant set switches, for r rows from position p.
func decodeLongPaired(m *Model, dtype, key string, r, p, steps int, set func(on bool)) {
	defer set(true)
	var seqs [2][]*kvCache
	var wss [2]*workspace
	memGB := float64(envInt("LONG_MEM_GB", 0))
	huge := key == "huge"
	shared := !huge && 2*longCacheBytes(m, r, p+steps+2) > memGB*1e9
	seqs[0], wss[0], wss[1] = longSeqs(m, r, p, steps, false), &workspace{}, &workspace{}
	seqs[1] = seqs[0]
	if !shared {
		seqs[1] = longSeqs(m, r, p, steps, huge)
	}
	step := func(v, s int) (float64, float64) {
		set(v == 1)
		return rowsStep(m, wss[v], seqs[v], p+s)
	}
	var pr pairRatios
	l0 := loadAvg()
	pr.stepPairs(steps, step)
	fmt.Fprintf(os.Stderr, "long %s R=%d P=%d %s old/new (%d pairs%s): %s | load %s -> %s | step ms old %.2f new %.2f\n",
		dtype, r, p, key, len(pr.wall), map[bool]string{true: ", shared caches"}[shared], pr.figures(), l0, loadAvg(),
		1e3*median(pr.tOld), 1e3*median(pr.tNew))
}
