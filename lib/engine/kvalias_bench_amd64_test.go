//go:build goexperiment.simd && amd64 && linux

package engine

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkDecodeAlias decodes R rows that share one prompt of P
// positions (num_samples = R) on the 0.6B shape with bfloat16 weights on
// the float32 compute path, for each R of ALIAS_R (default "4,16") and P
// of ALIAS_POS (default "512,1024,2048") (ALIAS_DTYPE=bf16-compute: on
// the bf16 compute path, whose attention reads its own bfloat16 copies
// made from these caches): the rows' caches either copies
// of the prompt's cache (old, as before kvalias.go) or mapping its memory
// file (new). On the bf16 compute path the prompt's cache holds the bf16
// copy its prefill would have packed. It prints the start cost of each (R clones, the memory file
// included), the memory each set adds (proportional set size, which
// counts a page mapped by several rows once; the copies mostly reuse
// heap memory the process holds already, so their own bytes are printed
// beside), and ALIAS_STEPS (default
// 16) steps from P, old and new alternating step by step (the order
// within a pair alternating): the old step's wall and process CPU over
// the new one's, median, lower quartile and minimum. ALIAS_SWITCH=alias
// (the default) is that; ALIAS_SWITCH=control compares two sets of
// copies instead (what two sets of caches alone make of the ratio);
// ALIAS_SWITCH=bf16 compares mapping rows without (old) and with (new)
// their bf16 copies mapped (kvAliasBF16), the memory each
// side's first step adds (its bf16 copy, packed there or copied at the
// start) printed beside; ALIAS_SWITCH=bf16control is that with neither
// mapped (its control, cheaper in memory than two sets of copies). Run
// with -benchtime 1x.
func BenchmarkDecodeAlias(b *testing.B) {
	m := qwen3SmallBF16(b, "decode-alias")
	if os.Getenv("ALIAS_DTYPE") == "bf16-compute" {
		if !bf16Compute() {
			b.Skip("this CPU has no AVX512-BF16: no bf16 compute path")
		}
		m.w.withBF16Compute()
	}
	rs, ps := envInts(b, "ALIAS_R", "4,16"), envInts(b, "ALIAS_POS", "512,1024,2048")
	steps := envInt("ALIAS_STEPS", 16)
	key := cmp.Or(os.Getenv("ALIAS_SWITCH"), "alias")
	if key != "alias" && key != "control" && key != "bf16" && key != "bf16control" {
		b.Fatalf("ALIAS_SWITCH=%s: none such; set alias, bf16, bf16control or control", key)
	}
	defer func() { kvAliasBF16 = true }()
	for b.Loop() {
		for _, r := range rs {
			for _, p := range ps {
				decodeAliasPaired(m, r, p, steps, key)
				debug.FreeOSMemory()
			}
		}
	}
}

// decodeAliasPaired is BenchmarkDecodeAlias for r rows from position p.
func decodeAliasPaired(m *Model, r, p, steps int, key string) {
	src := longSeqs(m, 1, p, steps, false)[0]
	room := p + steps + 2
	if m.bf16Attention(0) {
		// What the prompt's prefill on the bf16 path leaves.
		c, st := m.cfg, src.bf16Cache(m.cfg)
		for l := range c.Layers {
			for h := range c.KVHeads {
				st.kv[l][h].pack(src.k[l], src.v[l], 0, p, c.KVHeads*c.HeadDim, h*c.HeadDim, c.HeadDim)
			}
			st.n[l] = p
		}
	}
	copies := func() ([]*kvCache, float64, float64) {
		runtime.GC()
		pss0 := selfPss()
		t0 := time.Now()
		seqs := make([]*kvCache, r)
		for i := range seqs {
			seqs[i] = src.clone(p, room, nil)
		}
		return seqs, time.Since(t0).Seconds(), selfPss() - pss0
	}
	aliased := func(bf16 bool) ([]*kvCache, float64, float64) {
		kvAliasBF16 = bf16
		runtime.GC()
		pss0 := selfPss()
		t0 := time.Now()
		a := src.aliasFor(p)
		seqs := make([]*kvCache, r)
		for i := range seqs {
			seqs[i] = src.cloneAliased(a, p, room, room, nil)
			if seqs[i].alias == nil {
				panic("decodeAliasPaired: a row did not alias")
			}
		}
		return seqs, time.Since(t0).Seconds(), selfPss() - pss0
	}
	var seqs [2][]*kvCache
	var start, mem [2]float64
	switch key {
	case "control":
		seqs[0], start[0], mem[0] = copies()
		seqs[1], start[1], mem[1] = copies()
	case "bf16":
		seqs[0], start[0], mem[0] = aliased(false)
		seqs[1], start[1], mem[1] = aliased(true)
	case "bf16control":
		seqs[0], start[0], mem[0] = aliased(false)
		seqs[1], start[1], mem[1] = aliased(false)
	default:
		seqs[0], start[0], mem[0] = copies()
		seqs[1], start[1], mem[1] = aliased(true)
	}
	wss := [2]*workspace{{}, {}}
	step := func(v, s int) (float64, float64) { return rowsStep(m, wss[v], seqs[v], p+s) }
	// Each side's first step alone (stepPairs runs it again, unpaired):
	// the memory it adds, the bf16 copies packed there.
	var first, firstT [2]float64
	for v := range 2 {
		debug.FreeOSMemory()
		pss0 := selfPss()
		firstT[v], _ = step(v, 0)
		first[v] = selfPss() - pss0
	}
	var pr pairRatios
	l0 := loadAvg()
	pr.stepPairs(steps, step)
	fmt.Fprintf(os.Stderr, "alias R=%d P=%d %s old/new (%d pairs): %s | load %s -> %s | step ms old %.2f new %.2f | start ms old %.1f new %.1f, first step %.1f %.1f | MB: copies hold %.0f; PSS added old %.0f new %.0f, by the first step old %.0f new %.0f\n",
		r, p, key, len(pr.wall), pr.figures(), l0, loadAvg(), 1e3*median(pr.tOld), 1e3*median(pr.tNew),
		1e3*start[0], 1e3*start[1], 1e3*firstT[0], 1e3*firstT[1], float64(r*seqs[0][0].bytes())/1e6, mem[0]/1e6, mem[1]/1e6, first[0]/1e6, first[1]/1e6)
	for _, set := range seqs {
		for _, c := range set {
			var pool *kvPool
			pool.put(c) // releases the aliased ones
		}
	}
	src.dropAlias()
}

// selfPss is the process's proportional set size in bytes
// (/proc/self/smaps_rollup), or 0.
func selfPss() float64 {
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return float64(kb) * 1024
		}
	}
	return 0
}

// BenchmarkSampleAlias samples ALIAS_R (default 16) sequences of
// ALIAS_TOKENS (default 64) tokens from one prompt of ALIAS_POS (default
// 1024) positions through Sample (num_samples) on the 0.6B shape with
// bfloat16 weights, with prompt aliasing on or off (ALIAS_ON=0), one
// setting a process (ALIAS_DTYPE=bf16-compute: on the bf16 compute path,
// ALIAS_BF16=0 without the bf16 copies mapped; ALIAS_LEADER=0 with the
// leader's cache a heap copy beside the memory file, as before
// kvAliasLeader and kvAliasLeaderSingle; ALIAS_SINGLE=1 as ALIAS_R
// single requests at once, the first leading, the others following):
// it prints the wall time to the first token, of the
// whole request, and the proportional set size halfway through the
// decode once the heap has returned its free pages (the process's peak
// resident set, VmHWM, beside it counts a page mapped by several rows
// once per mapping).
func BenchmarkSampleAlias(b *testing.B) {
	m := qwen3SmallBF16(b, "sample-alias")
	if os.Getenv("ALIAS_DTYPE") == "bf16-compute" {
		if !bf16Compute() {
			b.Skip("this CPU has no AVX512-BF16: no bf16 compute path")
		}
		m.w.withBF16Compute()
	}
	kvAliasBF16 = os.Getenv("ALIAS_BF16") != "0"
	kvAliasLeader = os.Getenv("ALIAS_LEADER") != "0"
	kvAliasLeaderSingle = kvAliasLeader
	single := os.Getenv("ALIAS_SINGLE") == "1"
	defer func() { kvAliasBF16, kvAliasLeader, kvAliasLeaderSingle = true, true, true }()
	r, p, tokens := envInt("ALIAS_R", 16), envInt("ALIAS_POS", 1024), envInt("ALIAS_TOKENS", 64)
	kvAliasPrefix = os.Getenv("ALIAS_ON") != "0"
	defer func() { kvAliasPrefix = true }()
	prompt := make([]int, p)
	for i := range prompt {
		prompt[i] = (i*131 + 7) % m.cfg.VocabSize
	}
	for b.Loop() {
		var pss float64
		var first time.Duration
		t0 := time.Now()
		req := SampleRequest{Prompt: prompt, MaxTokens: tokens, Temperature: 1, Seed: seedp(5), NumSamples: r,
			StopFunc: func(gen []int) bool {
				if len(gen) == 1 && first == 0 {
					first = time.Since(t0)
				}
				if len(gen) == tokens/2 && pss == 0 {
					debug.FreeOSMemory() // the heap's free pages (a prefill's scratch) back, on both sides
					pss = selfPss()
				}
				return false
			}}
		rows0, bf0, prompts0, remapped0 := kvAliasRows.Load(), kvAliasRowsBF16.Load(), kvAliasPrompts.Load(), kvAliasRemapped.Load()
		if single {
			// The StopFuncs run on the one stepping goroutine.
			errs := make([]error, r)
			var wg sync.WaitGroup
			for i := range r {
				one := req
				one.NumSamples, one.Seed = 1, seedp(int64(5+i))
				wg.Go(func() { _, errs[i] = m.Sample(context.Background(), one) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				b.Fatal(err)
			}
		} else if _, err := m.Sample(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		total := time.Since(t0)
		fmt.Fprintf(os.Stderr, "sample alias=%v bf16=%v leader=%v single=%v R=%d P=%d tokens=%d: first token %.2f s, all %.2f s (decode %.1f ms a step) | PSS halfway %.0f MB, VmHWM %.0f MB | rows aliased %d (bf16 %d), prompt caches mapped %d, remapped %d | load %s\n",
			kvAliasPrefix, kvAliasBF16, kvAliasLeader, single, r, p, tokens, first.Seconds(), total.Seconds(), 1e3*(total-first).Seconds()/float64(tokens-1),
			pss/1e6, selfHWM()/1e6, kvAliasRows.Load()-rows0, kvAliasRowsBF16.Load()-bf0, kvAliasPrompts.Load()-prompts0, kvAliasRemapped.Load()-remapped0, loadAvg())
	}
}

// selfHWM is the process's peak resident set in bytes, or 0.
func selfHWM() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return float64(kb) * 1024
		}
	}
	return 0
}

// BenchmarkLeaderPrefill prefills ALIAS_POS (default 1024) prompt
// positions on the 0.6B shape with bfloat16 weights (ALIAS_DTYPE=
// bf16-compute: on the bf16 compute path) into a fresh heap cache (as
// before kvAliasLeader), a memory file's mapping (newKVAliasPromptCache)
// and anonymous memory (newKVAliasOwnCache), ALIAS_ROUNDS (default 3)
// rounds of the three in turn, each made within its timing (the heap's
// reusing the previous round's freed pages, as the pool would): it
// prints each round's wall and process CPU of the two over the heap's,
// and the time each cache took to make.
func BenchmarkLeaderPrefill(b *testing.B) {
	m := qwen3SmallBF16(b, "leader-prefill")
	if os.Getenv("ALIAS_DTYPE") == "bf16-compute" {
		if !bf16Compute() {
			b.Skip("this CPU has no AVX512-BF16: no bf16 compute path")
		}
		m.w.withBF16Compute()
	}
	p, rounds := envInt("ALIAS_POS", 1024), envInt("ALIAS_ROUNDS", 3)
	kw, vw := m.cfg.cacheWidths()
	layers := m.cfg.Layers
	makers := []func() *kvCache{
		func() *kvCache { return m.newCache(p) },
		func() *kvCache { return newKVAliasPromptCache(layers, kw, vw, p) },
		func() *kvCache { return newKVAliasOwnCache(layers, kw, vw, p, p) },
	}
	ws := &workspace{}
	for b.Loop() {
		for round := range rounds {
			var wall, cpu, made [3]float64
			for k := range 3 {
				v := (k + round) % 3
				runtime.GC()
				t0, c0 := time.Now(), processCPU()
				c := makers[v]()
				if c == nil {
					b.Fatalf("variant %d: no cache", v)
				}
				made[v] = time.Since(t0).Seconds()
				for lo := 0; lo < p; lo += prefillChunk {
					var rows []row
					for i := lo; i < min(p, lo+prefillChunk); i++ {
						rows = append(rows, row{seq: c, token: (i*131 + 7) % m.cfg.VocabSize, pos: i, logits: i == p-1})
					}
					m.forward(ws, rows)
				}
				wall[v], cpu[v] = time.Since(t0).Seconds(), processCPU()-c0
				var pool *kvPool
				pool.put(c) // unmaps the mapped ones
			}
			fmt.Fprintf(os.Stderr, "leader prefill P=%d round %d: heap %.2f s (CPU %.2f) | file/heap wall %.3f CPU %.3f | anon/heap wall %.3f CPU %.3f | made in ms: heap %.0f file %.0f anon %.0f | load %s\n",
				p, round, wall[0], cpu[0], wall[1]/wall[0], cpu[1]/cpu[0], wall[2]/wall[0], cpu[2]/cpu[0], 1e3*made[0], 1e3*made[1], 1e3*made[2], loadAvg())
		}
	}
}
