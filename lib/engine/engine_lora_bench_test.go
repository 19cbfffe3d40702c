package engine

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
)

// BenchmarkGenerateLoRA is BenchmarkGenerate's cases with a rank-32
// adapter (alpha 64; GEN_LORA_RANK to change) on every linear layer and
// the lm_head, each paired with the same case on the base model in the
// same round, the order alternating by round: one sequence (1seq), 8
// sequences in one request (8batch), 8 concurrent requests of one
// sequence (8conc), and 8 concurrent requests each with its own adapter
// and prompt (8tenant: the multi-tenant batch, against the same 8
// prompts on the base; the prompts differ so that the base, like the
// tenants, prefills each: requests share a prompt's prefill only with
// the same adapter, prefixshare.go). Per case
// it reports the median, over rounds, of the adapter's tok/s over the
// base's (wall and process CPU: above 1 the adapter is faster), and
// bytes+ the adapter's extra bytes a decoding step reads over the base
// model's (its weights as stored): with memory-bound decoding the ratio
// to aim at is about 1/(1+bytes+). Run with -benchtime Nx (rounds);
// GEN_LORA_CASES=1seq,8batch,... picks cases, GEN_LORA_MODELS models,
// GEN_LORA_TOKENS the tokens a sequence, GEN_LORA_PROMPT the prompt's
// length (at most 64 on the 0.6B shape, 3 on the tiny ones); GEN_LORA_AB=fork compares
// the adapters' tokens with loraFork on (lora) and off (base) instead,
// GEN_LORA_AB=minwork with loraProducts' fork thresholds as set (lora)
// and at loraMainMinWork (base).
func BenchmarkGenerateLoRA(b *testing.B) {
	names := []string{models.TinyLlama, models.TinyQwen3, "qwen3-0.6b-shape-bf16"}
	if s := os.Getenv("GEN_LORA_MODELS"); s != "" {
		names = splitComma(s)
	}
	cases := []string{"1seq", "8batch", "8conc", "8tenant"}
	if s := os.Getenv("GEN_LORA_CASES"); s != "" {
		cases = splitComma(s)
	}
	rank := envInt("GEN_LORA_RANK", 32)
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			base, tokens, prompt := benchModel(b, name)
			tokens = envInt("GEN_LORA_TOKENS", tokens)
			prompt = prompt[:min(len(prompt), envInt("GEN_LORA_PROMPT", len(prompt)))]
			ls := make([]*LoRA, 8)
			for i := range ls {
				l, err := NewLoRA(base.cfg, randomLoRA(base.cfg, rank, uint64(10+i), false), rank, float64(2*rank), false)
				if err != nil {
					b.Fatal(err)
				}
				ls[i] = l
			}
			tuned := base.WithLoRA(ls[0])
			// GEN_LORA_AB=fork: both sides with the adapters, loraFork
			// off (the "base" side) and on; =minwork: loraFork on, the
			// thresholds at loraMainMinWork (the "base" side) and as set.
			mode := os.Getenv("GEN_LORA_AB")
			ab := mode == "fork" || mode == "minwork"
			defer func(f bool, w, a int) {
				loraFork, loraForkMinWork, loraForkAwakeMinWork = f, w, a
			}(loraFork, loraForkMinWork, loraForkAwakeMinWork)
			minWork, awake := loraForkMinWork, loraForkAwakeMinWork
			run := func(c string, adapter bool, seed int64) genRun {
				m := base
				if adapter || ab {
					m = tuned
				}
				switch mode {
				case "fork":
					loraFork = adapter
				case "minwork":
					loraForkMinWork, loraForkAwakeMinWork = minWork, awake
					if !adapter {
						loraForkMinWork, loraForkAwakeMinWork = loraMainMinWork, loraMainMinWork
					}
				}
				switch c {
				case "1seq":
					return measure(base, func() int { return generate(b, m, prompt, 1, tokens, seed) })
				case "8batch":
					return measure(base, func() int { return generate(b, m, prompt, 8, tokens, seed) })
				case "8conc", "8tenant":
					return measure(base, func() int {
						var wg sync.WaitGroup
						var n atomic.Int64
						for i := range 8 {
							mi, pi := m, prompt
							if c == "8tenant" {
								pi = tenantPrompt(prompt, i)
								if adapter || ab {
									mi = base.WithLoRA(ls[i])
								}
							}
							wg.Go(func() { n.Add(int64(generate(b, mi, pi, 1, tokens, seed*8+int64(i)))) })
						}
						wg.Wait()
						return int(n.Load())
					})
				}
				b.Fatalf("GEN_LORA_CASES: no case %q (1seq, 8batch, 8conc, 8tenant)", c)
				return genRun{}
			}
			for _, c := range cases {
				run(c, false, 0)
				run(c, true, 0)
			}
			wall, cpu := map[string][]float64{}, map[string][]float64{}
			seed := int64(0)
			for b.Loop() {
				seed++
				for _, c := range cases {
					var rb, ra genRun
					if seed%2 == 0 {
						ra, rb = run(c, true, seed), run(c, false, seed)
					} else {
						rb, ra = run(c, false, seed), run(c, true, seed)
					}
					wall[c] = append(wall[c], ra.rate()/rb.rate())
					cpu[c] = append(cpu[c], ra.cpuRate()/rb.cpuRate())
				}
			}
			extra := loraBytes(ls[0]) / modelBytes(base)
			b.ReportMetric(extra, "bytes+")
			for _, c := range cases {
				b.ReportMetric(median(wall[c]), "lora/base-"+c)
				b.ReportMetric(median(cpu[c]), "lora/base-cpu-"+c)
				w, u := slices.Sorted(slices.Values(wall[c])), slices.Sorted(slices.Values(cpu[c]))
				fmt.Fprintf(os.Stderr, "%s %s rank %d: adapter/base tok/s wall med %.3f q1 %.3f min %.3f | cpu med %.3f q1 %.3f min %.3f | bytes+ %.3f (8tenant %.3f) | load %s\n",
					name, c, rank, median(w), w[len(w)/4], w[0], median(u), u[len(u)/4], u[0], extra, 8*extra, loadAvg())
			}
		})
	}
}

// tenantPrompt is prompt with its last token changed for tenant i.
func tenantPrompt(prompt []int, i int) []int {
	p := slices.Clone(prompt)
	p[len(p)-1] += 1 + i
	return p
}

// loraBytes is the bytes of an adapter's matrices (float32).
func loraBytes(l *LoRA) float64 {
	n := 0
	add := func(p *loraPair) {
		if p != nil {
			n += len(p.a.data) + len(p.b.data)
		}
	}
	add(l.lmHead)
	for _, ll := range l.layers {
		for _, p := range []*loraPair{ll.q, ll.k, ll.v, ll.o, ll.gate, ll.up, ll.down} {
			add(p)
		}
	}
	return 4 * float64(n)
}

// modelBytes is the bytes of the matrices a decoding step reads: every
// layer's and the lm_head, as stored (bfloat16 or float32).
func modelBytes(m *Model) float64 {
	n := 0.0
	add := func(w mat) {
		if w.bf != nil {
			n += 2 * float64(w.rows*w.cols)
		} else {
			n += 4 * float64(w.rows*w.cols)
		}
	}
	add(m.w.lmHead)
	for _, lw := range m.w.layers {
		for _, w := range []mat{lw.q, lw.k, lw.v, lw.o, lw.gate, lw.up, lw.down} {
			add(w)
		}
	}
	return n
}

// splitComma is s's comma-separated fields, the empty ones dropped.
func splitComma(s string) []string {
	return slices.DeleteFunc(strings.Split(s, ","), func(f string) bool { return f == "" })
}

// loraMainMinWork is loraForkMinWork before it was raised, for
// BenchmarkLoRAForkSteps' LORA_STEPS_AB=minwork.
const loraMainMinWork = parallelMinWork

// BenchmarkLoRAForkSteps decodes 8 sequences in steps of all 8 rows,
// each with its own adapter (LORA_STEPS_TENANTS=8, the default) or all
// with one (=1), of rank LORA_STEPS_RANK (default 32, alpha twice it),
// on LORA_STEPS_MODEL (default the 0.6B shape in bfloat16; or a tiny
// model's name: tiny-llama, tiny-qwen3), and alternates loraFork off and
// on step by step, each side with its own caches: per pair the old
// step's time over the new one's (above 1: loraProducts faster), wall
// and process CPU, medians, lower quartiles and minima over all
// rounds (-benchtime Nx) of LORA_STEPS pairs (default 96; positions
// 1-96), and each side's median step. LORA_STEPS_CONTROL=1 runs loraFork
// on both sides. LORA_STEPS_AB=base pairs the base model's step (no
// adapter, the "old" side) with the adapters' (loraFork on): the ratio is
// then adapter over base steps a second, beside the goal 0.9/(1+bytes+),
// bytes+ the adapters' extra bytes a step reads over the base's.
// Decoding steps of 4-16 rows take the fused fork (fuseMaxRows), which
// runs the adapters itself; the benchmark holds fuseMaxRows at 3 so that
// its steps take loraProducts, unless LORA_STEPS_FUSE=1 (the adapters'
// cost as decoding now pays it, with LORA_STEPS_AB=base);
// LORA_STEPS_AB=fuse pairs the adapters' steps with fuseMaxRows 3 (old:
// loraProducts) and as it was (new: the fused fork).
// LORA_STEPS_AB=minwork pairs loraForkMinWork and loraForkAwakeMinWork
// at loraMainMinWork (old, main's) and at their values (new), loraFork on
// in both; LORA_FORK_MINWORK and LORA_FORK_AWAKE set the new values.
func BenchmarkLoRAForkSteps(b *testing.B) {
	defer func(f bool, w, a, r int) {
		loraFork, loraForkMinWork, loraForkAwakeMinWork, fuseMaxRows = f, w, a, r
	}(loraFork, loraForkMinWork, loraForkAwakeMinWork, fuseMaxRows)
	fuseRows := fuseMaxRows
	if os.Getenv("LORA_STEPS_FUSE") != "1" {
		fuseMaxRows = 3 // steps of 8 rows take loraProducts, not the fused fork
	}
	awake := envInt("LORA_FORK_AWAKE", loraForkAwakeMinWork)
	minWork := envInt("LORA_FORK_MINWORK", loraForkMinWork)
	loraForkMinWork = minWork
	var m *Model
	if name := os.Getenv("LORA_STEPS_MODEL"); name != "" {
		if !strings.Contains(name, "/") {
			name = "tinker-local/" + name
		}
		m = mustLoad(b, name)
	} else {
		m = qwen3SmallBF16(b, "lora-fork-steps")
	}
	tenants, pairs := envInt("LORA_STEPS_TENANTS", 8), envInt("LORA_STEPS", 96)
	rank := envInt("LORA_STEPS_RANK", 32)
	control := os.Getenv("LORA_STEPS_CONTROL") == "1"
	ab := os.Getenv("LORA_STEPS_AB")
	ls := make([]*LoRA, 8)
	for i := range ls {
		if i >= tenants {
			ls[i] = ls[i%tenants]
			continue
		}
		l, err := NewLoRA(m.cfg, randomLoRA(m.cfg, rank, uint64(10+i), false), rank, float64(2*rank), false)
		if err != nil {
			b.Fatal(err)
		}
		ls[i] = l
	}
	extra := float64(tenants) * loraBytes(ls[0]) / modelBytes(m)
	var pr pairRatios
	l0 := loadAvg()
	for b.Loop() {
		var seqs [2][]*kvCache
		var wss [2]*workspace
		for v := range seqs {
			wss[v] = &workspace{}
			for range 8 {
				seqs[v] = append(seqs[v], m.newCache(pairs+1))
			}
		}
		step := func(v, p int) (float64, float64) {
			switch ab {
			case "base":
				loraFork = true
			case "fuse":
				loraFork, fuseMaxRows = true, fuseRows
				if v == 0 && !control {
					fuseMaxRows = 3
				}
			case "minwork":
				loraFork, loraForkMinWork, loraForkAwakeMinWork = true, minWork, awake
				if v == 0 && !control {
					loraForkMinWork, loraForkAwakeMinWork = loraMainMinWork, loraMainMinWork
				}
			default:
				loraFork = v == 1 || control
			}
			rows := make([]row, 8)
			for s, seq := range seqs[v] {
				rows[s] = row{seq: seq, token: (1000 + 37*p + 11*s) % m.cfg.VocabSize, pos: p, logits: true, lora: ls[s]}
				if ab == "base" && v == 0 {
					rows[s].lora = nil
				}
			}
			c0, t0 := processCPU(), time.Now()
			m.forward(wss[v], rows)
			return time.Since(t0).Seconds(), processCPU() - c0
		}
		pr.stepPairs(pairs, step)
	}
	{
		name := fmt.Sprintf("%s, %d adapters of rank %d, forks from %d", m.Name(), tenants, rank, minWork)
		switch {
		case ab == "base":
			name += fmt.Sprintf(", adapter/base (bytes+ %.3f, goal %.3f)", extra, 0.9/(1+extra))
		case ab == "fuse":
			name += fmt.Sprintf(", fused fork to %d rows against 3", fuseRows)
		case ab == "minwork":
			name += fmt.Sprintf(" (%d awake) against %d", awake, loraMainMinWork)
		}
		if control {
			name += " control"
		}
		fmt.Fprintf(os.Stderr, "lora fork steps, %s, old/new (%d pairs): %s | load %s -> %s | step ms old %.3f new %.3f\n",
			name, len(pr.wall), pr.figures(), l0, loadAvg(), 1e3*median(pr.tOld), 1e3*median(pr.tNew))
	}
}

// pairRatios gathers step-paired comparisons of an old and a new
// variant: per pair the old step's wall and process CPU time over the
// new one's, and each side's wall time.
type pairRatios struct{ wall, cpu, tOld, tNew []float64 }

// stepPairs runs steps 0..n of the old (v 0) and the new (v 1) side,
// which goes first alternating from pair to pair, and adds pairs 1..n
// to r (step 0 warms both).
func (r *pairRatios) stepPairs(n int, step func(v, p int) (wall, cpu float64)) {
	for p := range n + 1 {
		var w, c [2]float64
		if p%2 == 0 {
			w[0], c[0] = step(0, p)
			w[1], c[1] = step(1, p)
		} else {
			w[1], c[1] = step(1, p)
			w[0], c[0] = step(0, p)
		}
		if p > 0 {
			r.wall, r.cpu = append(r.wall, w[0]/w[1]), append(r.cpu, c[0]/c[1])
			r.tOld, r.tNew = append(r.tOld, w[0]), append(r.tNew, w[1])
		}
	}
}

// figures are the ratios' medians, lower quartiles and minima, CPU
// then wall, as the paired benchmarks print them.
func (r *pairRatios) figures() string {
	cpu, wall := slices.Sorted(slices.Values(r.cpu)), slices.Sorted(slices.Values(r.wall))
	k := len(wall)
	return fmt.Sprintf("cpu med %.4f q1 %.4f min %.3f | wall med %.4f q1 %.4f min %.3f",
		cpu[k/2], cpu[k/4], cpu[0], wall[k/2], wall[k/4], wall[0])
}
