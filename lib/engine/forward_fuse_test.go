package engine

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// TestDecodeFuseSameBits decodes one, two and three sequences at once, and
// a prompt a few positions at a time, with decodeFuse on and off, and
// requires the same bits in every logit and every cached key and value,
// with forks a product, a layer (fuseLayer) and a step (fuseToken):
// Qwen3 (q/k norms), Llama 3 with q, k and v biases and GPT-OSS (biases,
// sinks, a sliding window), float32 and bfloat16 weights, an intermediate
// width that is not a multiple of fuseBlock nor of the pieces' 16 rows.
func TestDecodeFuseSameBits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	defer func(v, l, k, h bool) { decodeFuse, fuseLayer, fuseToken, fuseHead = v, l, k, h }(decodeFuse, fuseLayer, fuseToken, fuseHead)
	for _, arch := range []models.Family{models.Qwen3, models.Llama3, models.GptOss} {
		for _, dtype := range []string{"f32", "bf16"} {
			m, _ := fuseTestModel(t, arch, dtype, "fuse-"+string(arch), 11, 5)
			lw := &m.w.layers[0]
			if arch != models.Qwen3 && lw.qBias == nil {
				t.Fatal("the q bias was not loaded")
			}
			if fuseWorkers(nil, make([][]float32, 1), lw.q, lw.k, lw.v) == 0 || lw.moe == nil && fuseWorkers(nil, make([][]float32, 1), lw.gate, lw.up) == 0 {
				t.Fatalf("%s: the test's shape does not take the fused path", arch)
			}
			name := fmt.Sprintf("%s %s", arch, dtype)
			logitsOff, cachesOff, _ := decodeSteps(t, m, 0, nil)
			for forks := 1; forks <= 4; forks++ {
				logitsOn, cachesOn, head := decodeSteps(t, m, forks, nil)
				if forks == 4 && arch != models.GptOss && !head {
					t.Fatalf("%s: the decoding steps' fork did not run the lm_head", name)
				}
				what := fmt.Sprintf("%s, %s:", name, [...]string{"", "forks a product", "a fork a layer", "a fork a step", "a fork a step with the lm_head"}[forks])
				fuseSameBits(t, what+" logits", logitsOff, logitsOn)
				fuseSameBits(t, what+" caches", cachesOff, cachesOn)
			}
		}
	}
}

// decodeSteps prefills three sequences, decodes them in steps of one, two
// and three rows and steps a fourth one's prompt a few positions at a
// time (the three-row steps' logits only for their last row), unfused
// (forks 0) or fused with forks a product (1), a fork a layer (2), a fork
// a step (3) or a fork a step and the lm_head (4, fuseHead: on the steps
// whose rows all want logits), and returns every step's logits and the
// caches' keys and values at the end, and whether the last decoding
// step's fork ran the lm_head.
func decodeSteps(t *testing.T, m *Model, forks int, loras []*LoRA) (logits, caches []float32, head bool) {
	t.Helper()
	decodeFuse, fuseLayer, fuseToken, fuseHead = forks > 0, forks > 1, forks > 2, forks > 3
	ws := &workspace{}
	adapter := func(s int) *LoRA { // sequence s's adapter
		if s < len(loras) {
			return loras[s]
		}
		return nil
	}
	seqs := []*kvCache{m.newCache(8), m.newCache(8), m.newCache(8)}
	for s, seq := range seqs {
		var rows []row
		for p := range 5 + s {
			rows = append(rows, row{seq: seq, token: (7*p + s) % m.cfg.VocabSize, pos: p, logits: true, lora: adapter(s)})
		}
		for _, l := range m.forward(ws, rows) {
			logits = append(logits, l...)
		}
	}
	for step := range 12 {
		var rows []row
		for s := range step%3 + 1 {
			seq := seqs[s]
			rows = append(rows, row{seq: seq, token: (13*step + 3*s) % m.cfg.VocabSize, pos: seq.n, logits: true, lora: adapter(s)})
		}
		for _, l := range m.forward(ws, rows) {
			logits = append(logits, l...)
		}
	}
	head = ws.fz.head
	if forks > 0 && len(loras) > 0 && len(ws.fz.lgroups) != 2 {
		t.Fatalf("the last three-row step's fork had %d adapter groups, want 2 (its rows: adapter, base, another adapter)", len(ws.fz.lgroups))
	}
	// A prompt in steps of three and two rows (n < 4: the fused path),
	// consecutive positions of one sequence, which the unfused step
	// attends as a block.
	run := m.newCache(8)
	for _, k := range []int{3, 2, 3} {
		var rows []row
		for range k {
			rows = append(rows, row{seq: run, token: (5*run.n + 1) % m.cfg.VocabSize, pos: run.n + len(rows), logits: k < 3 || len(rows) == k-1, lora: adapter(3)})
		}
		for _, l := range m.forward(ws, rows) {
			logits = append(logits, l...)
		}
	}
	seqs = append(seqs, run)
	caches = cachedValues(seqs)
	return logits, caches, head
}

// cachedValues is every key and value seqs hold, the bf16 path's packed
// copies and the positions packed too, for a same-bits comparison.
func cachedValues(seqs []*kvCache) []float32 {
	var caches []float32
	for _, seq := range seqs {
		for l := range seq.k {
			caches = append(caches, seq.k[l][:seq.n*seq.kw]...)
			caches = append(caches, seq.v[l][:seq.n*seq.vw]...)
		}
		if seq.bf16 == nil {
			continue
		}
		for l, heads := range seq.bf16.kv {
			caches = append(caches, float32(seq.bf16.n[l]))
			for _, kv := range heads {
				for _, u := range slices.Concat(kv.k, kv.vt) {
					caches = append(caches, float32(u))
				}
			}
		}
	}
	return caches
}

func fuseSameBits(t *testing.T, what string, want, got []float32) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i, v := range want {
		if math.Float32bits(got[i]) != math.Float32bits(v) {
			t.Fatalf("%s: value %d = %g, unfused %g", what, i, got[i], v)
		}
	}
}

// TestDecodeFuseLoRASameBits is TestDecodeFuseSameBits with adapters
// (fuseLoRA): the first sequence and the prompt with one adapter (q to
// down and the lm_head), the second without, the third with another
// (no lm_head), so the steps of one to three rows are one adapter's,
// an adapter's and a base row, and three rows of two adapters and the
// base; the prompt's two-row steps one adapter's. Qwen3, Llama 3 with
// q, k and v biases, GPT-OSS (its mixture-of-experts layers fuse q, k
// and v only). Every logit and cached key and value the same bits fused
// in each shape and unfused, and it fails if the adapter rows did not
// take the fused fork.
func TestDecodeFuseLoRASameBits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	defer func(v, l, k, h, a bool) { decodeFuse, fuseLayer, fuseToken, fuseHead, fuseLoRA = v, l, k, h, a }(decodeFuse, fuseLayer, fuseToken, fuseHead, fuseLoRA)
	fuseLoRA = true
	for _, arch := range []models.Family{models.Qwen3, models.Llama3, models.GptOss} {
		for _, dtype := range []string{"f32", "bf16"} {
			m, c := fuseTestModel(t, arch, dtype, "fuse-lora-"+string(arch), 11, 5)
			la, lb := fuseTestAdapters(t, c)
			if la.lmHead == nil || lb.lmHead != nil || la.layers[1].q == nil {
				t.Fatal("the adapters are not the ones the test means")
			}
			loras := []*LoRA{la, nil, lb, la}
			name := fmt.Sprintf("%s %s with adapters", arch, dtype)
			logitsOff, cachesOff, _ := decodeSteps(t, m, 0, loras)
			base, _, _ := decodeSteps(t, m, 0, nil)
			if slices.Equal(base, logitsOff) {
				t.Fatalf("%s: the adapters changed no logit", name)
			}
			for forks := 1; forks <= 4; forks++ {
				logitsOn, cachesOn, head := decodeSteps(t, m, forks, loras)
				if forks == 4 && arch != models.GptOss && !head {
					t.Fatalf("%s: the decoding steps' fork did not run the lm_head", name)
				}
				what := fmt.Sprintf("%s, %s:", name, [...]string{"", "forks a product", "a fork a layer", "a fork a step", "a fork a step with the lm_head"}[forks])
				fuseSameBits(t, what+" logits", logitsOff, logitsOn)
				fuseSameBits(t, what+" caches", cachesOff, cachesOn)
			}
		}
	}
}

// fuseTestModel is the fused-fork tests' model of family arch: a small
// Qwen3 or Llama 3 (with q, k and v biases, from biasSeed), or GPT-OSS
// with sinks, biases and a sliding window of 3, its matrices in
// bfloat16 when dtype is "bf16".
func fuseTestModel(t *testing.T, arch models.Family, dtype, name string, seed, biasSeed uint64) (*Model, Config) {
	t.Helper()
	c := smallConfig(arch)
	if arch == models.GptOss {
		c = gptOssConfig()
		c.LayerTypes = append(c.LayerTypes, "sliding_attention")
	}
	c.Hidden, c.Intermediate, c.Heads, c.KVHeads, c.HeadDim, c.VocabSize, c.Layers = 256, 1000, 4, 2, 64, 300, 3
	ts := randomTensors(c, seed)
	if arch == models.Llama3 {
		r := newRNG(biasSeed)
		for l := range c.Layers {
			for name, rows := range map[string]int{"q": c.Heads * c.HeadDim, "k": c.KVHeads * c.HeadDim, "v": c.KVHeads * c.HeadDim} {
				b := make([]float32, rows)
				fill(b, r, 0.5)
				ts[fmt.Sprintf("model.layers.%d.self_attn.%s_proj.bias", l, name)] = Tensor{Shape: []int{rows}, Data: b}
			}
		}
	}
	if dtype == "bf16" {
		matricesToBF16(ts)
	}
	m, err := New(name, c, ts)
	if err != nil {
		t.Fatal(err)
	}
	return m, c
}

// fuseTestAdapters are the fused-fork tests' two adapters of c: la of
// rank 8 with an lm_head, lb of rank 4 without.
func fuseTestAdapters(t *testing.T, c Config) (la, lb *LoRA) {
	t.Helper()
	la, err := NewLoRA(c, randomLoRA(c, 8, 21, false), 8, 16, false)
	if err != nil {
		t.Fatal(err)
	}
	lts := randomLoRA(c, 4, 22, false)
	delete(lts, "base_model.model.lm_head.lora_A.weight")
	delete(lts, "base_model.model.lm_head.lora_B.weight")
	lb, err = NewLoRA(c, lts, 4, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	return la, lb
}
