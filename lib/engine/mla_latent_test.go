package engine

import (
	"context"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// wideDSConfig is a DeepSeek-V3 with more heads than one latent attention
// unit takes (latentHeads), so heads split into chunks, and widths the
// vector kernels take (latent + rope = 32), with the tiny vocabulary so
// the batcher's mixed requests run on it.
func wideDSConfig() Config {
	c := dsConfig(true)
	c.MLA = &models.MLA{QLoraRank: 16, KVLoraRank: 24, QKNopeDim: 8, QKRopeDim: 8, VHeadDim: 8}
	c.Heads, c.KVHeads, c.HeadDim = 2*latentHeads+3, 2*latentHeads+3, 16
	c.Hidden, c.VocabSize, c.MaxPositionEmbeddings = 32, models.TinyVocab, 1024
	return c
}

func wideDSModel(t *testing.T) *Model {
	t.Helper()
	c := wideDSConfig()
	m, err := New("wide-ds", c, randomTensors(c, 31))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// bf16DSModel is wideDSModel with bfloat16 matrices, kept so (as for
// models over 1B parameters), and the same weights widened for the
// reference.
func bf16DSModel(t *testing.T) (*Model, Tensors) {
	t.Helper()
	c := wideDSConfig()
	ts := randomTensors(c, 31)
	matricesToBF16(ts)
	m, err := New("wide-ds-bf16", c, ts)
	if err != nil {
		t.Fatal(err)
	}
	if m.w.layers[0].mla.kvB.bf == nil {
		t.Fatal("kv_b_proj was widened to float32")
	}
	wide := Tensors{}
	for k, x := range ts {
		if x.BF16 != nil {
			x.Data = make([]float32, len(x.BF16))
			widenBF16(x.Data, x.BF16)
			x.BF16 = nil
		}
		wide[k] = x
	}
	return m, wide
}

// expandedLogprobs are the logprobs of tokens[1:] given their prefixes
// from the training forward, which keeps the expanded keys and values.
func expandedLogprobs(t *testing.T, tr *Trainer, tokens []int) []float32 {
	t.Helper()
	n := len(tokens) - 1
	tg, w := make([]float64, n), make([]float64, n)
	for i := range n {
		tg[i], w[i] = float64(tokens[i+1]), 1
	}
	d := Datum{ModelInput: tokens[:n], LossFnInputs: map[string][]float64{InputTargetTokens: tg, InputWeights: w}}
	l, err := NewLoss(LossCrossEntropy, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Forward(context.Background(), l, []Datum{d})
	if err != nil {
		t.Fatal(err)
	}
	return res.Outputs[0].Logprobs
}

// Sampling's absorbed attention over the latent cache gives the expanded
// form's logprobs (the training forward's) within float32 rounding, for
// the prompt and for every decoded token, past several attention blocks
// and prefill chunks, base and with an adapter on every adapted matrix;
// and both stay within the float64 reference's tolerance.
func TestLatentDecodeMatchesExpanded(t *testing.T) {
	small, sts := dsDirModel(t, true)
	plain, pts := dsDirModel(t, false)
	tiny := mustLoad(t, models.TinyDeepSeek)
	_, tts, err := TinyTensors(models.TinyDeepSeek)
	if err != nil {
		t.Fatal(err)
	}
	wide := wideDSModel(t)
	wts := randomTensors(wide.cfg, 31)
	bf, bts := bf16DSModel(t)
	for _, tc := range []struct {
		name string
		m    *Model
		ts   Tensors
	}{{"tiny", tiny, tts}, {"qlora", small, sts}, {"qproj", plain, pts}, {"wide", wide, wts}, {"bf16", bf, bts}} {
		tr := dsAdapter(t, tc.m)
		lm, err := tr.Sampler()
		if err != nil {
			t.Fatal(err)
		}
		base := mustTrainer(t, tc.m, LoRAConfig{Rank: 2, Alpha: 4, TrainAttn: true, Seed: 1}) // lora_B zero: the base model
		prompt := testData(tc.m.cfg.VocabSize, 8, 37)[0].ModelInput
		for _, v := range []struct {
			name string
			m    *Model
			tr   *Trainer
			ref  *refModel
		}{{"base", tc.m, base, &refModel{c: tc.m.cfg, ts: tc.ts}},
			{"lora", lm, tr, &refModel{c: tc.m.cfg, ts: tc.ts, lora: tr.Adapter(), scale: tr.scale}}} {
			resp := sample(t, v.m, SampleRequest{Prompt: prompt, MaxTokens: 30, Temperature: 1, Seed: seedp(9), PromptLogprobs: true})
			seq := resp.Sequences[0]
			got := []float32{}
			for _, p := range resp.PromptLogprobs[1:] {
				got = append(got, *p)
			}
			got = append(got, seq.Logprobs[:len(seq.Logprobs)-1]...)
			want := expandedLogprobs(t, v.tr, append(slices.Clone(prompt), seq.Tokens...))
			worst := 0.0
			for i := range got {
				d := math.Abs(float64(got[i] - want[i]))
				worst = max(worst, d/max(1, math.Abs(float64(want[i]))))
			}
			t.Logf("%s/%s: largest difference absorbed vs expanded %.2g (relative to max(1,|logprob|))", tc.name, v.name, worst)
			if worst > 2e-5 {
				t.Errorf("%s/%s: absorbed logprobs differ from the expanded form's by %.2g", tc.name, v.name, worst)
			}
			checkRef(t, v.ref, prompt, seq, 1, false)
		}
	}
}

// The sampling cache of a DeepSeek model holds the latent: kv_lora_rank +
// qk_rope_head_dim floats per layer and position, no values; and the
// reported size is what it allocates.
func TestLatentCacheBytes(t *testing.T) {
	m := mustLoad(t, models.TinyDeepSeek)
	c, ml := m.cfg, m.cfg.MLA
	latent := int64(4 * c.Layers * (ml.KVLoraRank + ml.QKRopeDim))
	if got := c.KVBytesPerPosition(); got != latent {
		t.Fatalf("KVBytesPerPosition %d, want the latent's %d", got, latent)
	}
	const n = 21
	cache := m.newCache(n)
	rows := make([]row, n)
	for i := range rows {
		rows[i] = row{seq: cache, token: 'a' + i, pos: i}
	}
	m.forward(&workspace{}, rows)
	var bytes int64
	for l := range cache.k {
		bytes += 4 * int64(len(cache.k[l])+len(cache.v[l]))
	}
	if cache.n != n || bytes != n*latent {
		t.Errorf("%d positions hold %d bytes, want %d·%d", cache.n, bytes, n, latent)
	}
	llama := mustLoad(t, models.TinyLlama).cfg
	if got, want := llama.KVBytesPerPosition(), int64(4*llama.Layers*2*llama.KVHeads*llama.HeadDim); got != want {
		t.Errorf("tiny-llama: KVBytesPerPosition %d, want %d", got, want)
	}
	// DeepSeek V3.1's shape: 576 floats per layer against 2·128·192.
	a, ok := models.Lookup("deepseek-ai/DeepSeek-V3.1")
	if !ok {
		t.Fatal("DeepSeek-V3.1 is not in the catalog")
	}
	ds := Config{Shape: a.Shape}
	expanded := 4 * int64(a.Layers) * int64(2*a.Heads*a.HeadDim)
	if got := ds.KVBytesPerPosition(); got != 4*int64(a.Layers)*576 || float64(expanded)/float64(got) < 85 {
		t.Errorf("DeepSeek-V3.1: %d bytes per position, want %d (1/%.1f of the expanded %d)", got, 4*a.Layers*576,
			float64(expanded)/float64(got), expanded)
	}
}

// A DeepSeek model whose heads split into several attention units gives
// each request the same bits alone as batched with requests that differ
// in everything, on one core and on three. Batched, the first step's
// prefill budget runs out inside the last long prompt, so its chunks, and
// the attention blocks within them, start at other positions than alone.
// Emulated runs (the AVX2 and arm64 kernels) take short prompts and leave
// out the mixed requests.
func TestLatentIndependentOfBatchAndThreads(t *testing.T) {
	m := wideDSModel(t)
	calls := []call{{m, SampleRequest{Prompt: []int{models.TinyBOS, 'z'}, MaxTokens: 9, Temperature: 1, Seed: seedp(7)}}}
	long := testData(m.cfg.VocabSize, 3, 300)[0].ModelInput
	n, longCalls := 150, 4
	if emulated() {
		n, longCalls = 20, 2 // the kernel tests there check misaligned blocks
	}
	for i := range longCalls {
		calls = append(calls, call{m, SampleRequest{Prompt: long[i*7 : n+i*37], MaxTokens: 8, Temperature: 1, Seed: seedp(int64(i)), PromptLogprobs: true}})
	}
	if !emulated() {
		calls = append(calls, mixedCalls(t, m)...)
	}
	var first []*SampleResponse
	for _, procs := range []int{1, 3} {
		old := runtime.GOMAXPROCS(procs)
		solo := make([]*SampleResponse, len(calls))
		for i, c := range calls {
			solo[i] = sample(t, c.m, c.req)
		}
		got := make([]*SampleResponse, len(calls))
		done := make(chan struct{})
		release := holdBatch(t, calls[0].m)
		for i, c := range calls {
			go func() {
				got[i], _ = c.m.Sample(context.Background(), c.req)
				done <- struct{}{}
			}()
		}
		waitQueued(t, m.batch, len(calls))
		release()
		for range calls {
			<-done
		}
		for i := range calls {
			if got[i] == nil {
				t.Fatalf("GOMAXPROCS=%d request %d failed", procs, i)
			}
			if d := sameResponse(solo[i], got[i]); d != "" {
				t.Errorf("GOMAXPROCS=%d request %d: batched differs from alone: %s", procs, i, d)
			}
			if procs == 3 {
				if d := sameResponse(first[i], got[i]); d != "" {
					t.Errorf("request %d: three cores differ from one: %s", i, d)
				}
			}
		}
		first = got
		runtime.GOMAXPROCS(old)
	}
}
