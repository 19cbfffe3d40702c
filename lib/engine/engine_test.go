package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

const tol = 1e-4

func mustLoad(t testing.TB, name string) *Model {
	t.Helper()
	m, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func seedp(s int64) *int64 { return &s }

func sample(t testing.TB, m *Model, req SampleRequest) *SampleResponse {
	t.Helper()
	r, err := m.Sample(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// randomLoRA returns PEFT-named adapter tensors for every supported module
// with A and B drawn from seed (B all zero when zeroB).
func randomLoRA(c Config, rank int, seed uint64, zeroB bool) Tensors {
	r := newRNG(seed)
	ts := Tensors{}
	// addN adds a module; experts > 0 stacks nA and nB slices of A and B.
	addN := func(module string, in, out, nA, nB int) {
		a := make([]float32, max(nA, 1)*rank*in)
		b := make([]float32, max(nB, 1)*out*rank)
		fill(a, r, 1/math.Sqrt(float64(in)))
		if !zeroB {
			fill(b, r, 0.5)
		}
		sa, sb := []int{rank, in}, []int{out, rank}
		if nA > 0 {
			sa, sb = append([]int{nA}, sa...), append([]int{nB}, sb...)
		}
		ts["base_model.model."+module+".lora_A.weight"] = Tensor{Shape: sa, Data: a}
		ts["base_model.model."+module+".lora_B.weight"] = Tensor{Shape: sb, Data: b}
	}
	add := func(module string, in, out int) { addN(module, in, out, 0, 0) }
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	for i := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		if c.MLA != nil {
			dsLoRAModules(c, i, p, addN)
			continue
		}
		add(p+"self_attn.q_proj", c.Hidden, qd)
		add(p+"self_attn.k_proj", c.Hidden, kvd)
		add(p+"self_attn.v_proj", c.Hidden, kvd)
		add(p+"self_attn.o_proj", qd, c.Hidden)
		if c.IsMoELayer(i) {
			// The service's shared-outer form: the hidden-side factor is [1, ...].
			addN(p+"mlp.experts.w1", c.Hidden, c.MoEIntermediate, 1, c.Experts)
			addN(p+"mlp.experts.w2", c.MoEIntermediate, c.Hidden, c.Experts, 1)
			addN(p+"mlp.experts.w3", c.Hidden, c.MoEIntermediate, 1, c.Experts)
			continue
		}
		add(p+"mlp.gate_proj", c.Hidden, c.Intermediate)
		add(p+"mlp.up_proj", c.Hidden, c.Intermediate)
		add(p+"mlp.down_proj", c.Intermediate, c.Hidden)
	}
	add("lm_head", c.Hidden, c.VocabSize)
	return ts
}

// checkAgainstRef verifies every generated token's logprob (and, when
// greedy, the token itself) against the reference forward pass, which
// recomputes the whole sequence for every step.
func checkAgainstRef(t *testing.T, ref *refModel, prompt []int, seq Sequence, temp float64) {
	t.Helper()
	checkRef(t, ref, prompt, seq, temp, true)
}

// checkRef is checkAgainstRef; with perStep false it runs the reference
// once over the final sequence and reads every position's logits from that
// (the same numbers, by causality, at a fraction of the cost).
func checkRef(t *testing.T, ref *refModel, prompt []int, seq Sequence, temp float64, perStep bool) {
	t.Helper()
	full := append(slices.Clone(prompt), seq.Tokens...)
	var once [][]float64
	if !perStep {
		once = ref.logits(full)
	}
	invT := 1.0
	if temp > 0 {
		invT = 1 / temp
	}
	for i, tok := range seq.Tokens {
		var logits []float64
		if perStep {
			all := ref.logits(full[:len(prompt)+i])
			logits = all[len(all)-1]
		} else {
			logits = once[len(prompt)-1+i]
		}
		ls := refLogSoftmax(logits, invT)
		if d := math.Abs(float64(seq.Logprobs[i]) - ls[tok]); d > tol {
			t.Errorf("token %d (%d): engine logprob %.6f, reference %.6f (diff %.2g)", i, tok, seq.Logprobs[i], ls[tok], d)
		}
		if temp == 0 {
			best := 0
			for j, v := range ls {
				if v > ls[best] {
					best = j
				}
			}
			if best != tok && ls[best]-ls[tok] > tol {
				t.Errorf("greedy token %d: engine %d, reference argmax %d", i, tok, best)
			}
		}
	}
}

func TestLogprobsMatchReference(t *testing.T) {
	for _, name := range testModels(t) {
		for _, temp := range []float64{0, 1, 0.7} {
			t.Run(fmt.Sprintf("%s/T=%v", name, temp), func(t *testing.T) {
				c, ts, err := TinyTensors(name)
				if err != nil {
					t.Fatal(err)
				}
				m := mustLoad(t, name)
				prompt := m.Tokenizer().Encode("The quick brown fox", true)
				resp := sample(t, m, SampleRequest{Prompt: prompt, MaxTokens: 12, Temperature: temp, Seed: seedp(7)})
				if len(resp.Sequences[0].Tokens) != 12 {
					t.Fatalf("got %d tokens", len(resp.Sequences[0].Tokens))
				}
				checkAgainstRef(t, &refModel{c: c, ts: ts}, prompt, resp.Sequences[0], temp)
				if temp != 1 && temp != 0 {
					// Same draw, logprobs under the model's own distribution.
					raw := sample(t, m, SampleRequest{Prompt: prompt, MaxTokens: 12, Temperature: temp, Seed: seedp(7), ModelLogprobs: true})
					if !slices.Equal(raw.Sequences[0].Tokens, resp.Sequences[0].Tokens) {
						t.Fatal("ModelLogprobs changed the sampled tokens")
					}
					checkAgainstRef(t, &refModel{c: c, ts: ts}, prompt, raw.Sequences[0], 1)
				}
			})
		}
	}
}

func TestPromptLogprobsMatchReference(t *testing.T) {
	for _, name := range testModels(t) {
		c, ts, _ := TinyTensors(name)
		m := mustLoad(t, name)
		// Longer than prefillChunk, so the chunked prefill is covered.
		prompt := m.Tokenizer().Encode(strings.Repeat("pack my box with five dozen liquor jugs. ", 4), true)
		resp := sample(t, m, SampleRequest{Prompt: prompt, MaxTokens: 1, Temperature: 1, PromptLogprobs: true, TopKPromptLogprobs: 3})
		lp := resp.PromptLogprobs
		if len(lp) != len(prompt) || lp[0] != nil || resp.TopKPromptLogprobs[0] != nil {
			t.Fatalf("%s: prompt logprobs: len %d (want %d), first %v", name, len(lp), len(prompt), lp[0])
		}
		logits := (&refModel{c: c, ts: ts}).logits(prompt)
		for i := 1; i < len(prompt); i++ {
			ls := refLogSoftmax(logits[i-1], 1)
			if d := math.Abs(float64(*lp[i]) - ls[prompt[i]]); d > tol {
				t.Errorf("%s position %d: %.6f vs reference %.6f", name, i, *lp[i], ls[prompt[i]])
			}
			top := resp.TopKPromptLogprobs[i]
			order := sortedByLogit(toF32(ls), nil)
			for k, e := range top {
				if e.Token != order[k] || math.Abs(float64(e.Logprob)-ls[e.Token]) > tol {
					t.Errorf("%s position %d top-%d: %+v, reference token %d (%.6f)", name, i, k, e, order[k], ls[order[k]])
				}
			}
		}
	}
}

func toF32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

func TestLoRAMatchesMergedReference(t *testing.T) {
	for _, name := range testModels(t) {
		t.Run(name, func(t *testing.T) {
			c, ts, _ := TinyTensors(name)
			base := mustLoad(t, name)
			prompt := base.Tokenizer().Encode("LoRA test", true)
			req := SampleRequest{Prompt: prompt, MaxTokens: 8, Temperature: 0, PromptLogprobs: true}
			baseResp := sample(t, base, req)

			const rank, alpha = 4, 32.0
			lts := randomLoRA(c, rank, 99, false)
			l, err := NewLoRA(c, lts, rank, alpha, false)
			if err != nil {
				t.Fatal(err)
			}
			want := 1
			for i := range c.Layers {
				moe := b2i(c.IsMoELayer(i))
				want += 4 - b2i(c.MLA != nil) + 3*max(1, c.Experts*moe) + 3*moe*b2i(c.SharedExperts > 0)
			}
			if l.Modules() != want {
				t.Errorf("adapter has %d modules", l.Modules())
			}
			tuned := sample(t, base.WithLoRA(l), req)
			checkAgainstRef(t, &refModel{c: c, ts: ts, lora: lts, scale: alpha / rank}, prompt, tuned.Sequences[0], 0)
			var moved float64
			for i := 1; i < len(prompt); i++ {
				moved = math.Max(moved, math.Abs(float64(*tuned.PromptLogprobs[i]-*baseResp.PromptLogprobs[i])))
			}
			if moved < 0.01 {
				t.Errorf("a non-zero LoRA B moved prompt logprobs by only %g", moved)
			}

			zl, err := NewLoRA(c, randomLoRA(c, rank, 99, true), rank, alpha, false)
			if err != nil {
				t.Fatal(err)
			}
			zero := sample(t, base.WithLoRA(zl), req)
			if !slices.Equal(zero.Sequences[0].Logprobs, baseResp.Sequences[0].Logprobs) ||
				!slices.Equal(zero.Sequences[0].Tokens, baseResp.Sequences[0].Tokens) {
				t.Errorf("a zero LoRA B changed the output: %v vs %v", zero.Sequences[0], baseResp.Sequences[0])
			}
			// The base model is unaffected by adapters derived from it.
			again := sample(t, base, req)
			if !slices.Equal(again.Sequences[0].Logprobs, baseResp.Sequences[0].Logprobs) {
				t.Error("base model output changed after using an adapter")
			}
		})
	}
}

func TestGreedyDeterministic(t *testing.T) {
	m := mustLoad(t, models.TinyQwen3)
	req := SampleRequest{Prompt: m.Tokenizer().Encode("greedy", true), MaxTokens: 30, Temperature: 0, NumSamples: 3}
	a, b := sample(t, m, req), sample(t, m, req)
	for i := range a.Sequences {
		if !slices.Equal(a.Sequences[i].Tokens, a.Sequences[0].Tokens) || !slices.Equal(a.Sequences[i].Tokens, b.Sequences[i].Tokens) ||
			!slices.Equal(a.Sequences[i].Logprobs, b.Sequences[i].Logprobs) {
			t.Fatalf("greedy sample %d differs", i)
		}
	}
	// Top-k 1 and a tiny top-p are greedy too.
	for _, r := range []SampleRequest{{TopK: 1}, {TopP: 1e-9}} {
		r.Prompt, r.MaxTokens, r.Temperature, r.Seed = req.Prompt, req.MaxTokens, 1.3, seedp(5)
		got := sample(t, m, r)
		if !slices.Equal(got.Sequences[0].Tokens, a.Sequences[0].Tokens) {
			t.Errorf("top_k=%d top_p=%g: %v, greedy %v", r.TopK, r.TopP, got.Sequences[0].Tokens, a.Sequences[0].Tokens)
		}
	}
}

func TestSeededSampling(t *testing.T) {
	m := mustLoad(t, models.TinyLlama)
	req := SampleRequest{Prompt: m.Tokenizer().Encode("seeded", true), MaxTokens: 40, Temperature: 1, Seed: seedp(42), NumSamples: 4}
	a, b := sample(t, m, req), sample(t, m, req)
	distinct := map[string]bool{}
	for i := range a.Sequences {
		if !slices.Equal(a.Sequences[i].Tokens, b.Sequences[i].Tokens) || !slices.Equal(a.Sequences[i].Logprobs, b.Sequences[i].Logprobs) {
			t.Errorf("sample %d not reproducible", i)
		}
		distinct[fmt.Sprint(a.Sequences[i].Tokens)] = true
	}
	if len(distinct) < 3 {
		t.Errorf("num_samples=4 gave only %d distinct samples", len(distinct))
	}
	// Sample i is the same alone or batched (batch invariance).
	one := req
	one.NumSamples = 1
	alone := sample(t, m, one)
	if !slices.Equal(alone.Sequences[0].Tokens, a.Sequences[0].Tokens) || !slices.Equal(alone.Sequences[0].Logprobs, a.Sequences[0].Logprobs) {
		t.Error("sample 0 differs between num_samples=1 and num_samples=4")
	}
	other := req
	other.Seed = seedp(43)
	if c := sample(t, m, other); slices.Equal(c.Sequences[0].Tokens, a.Sequences[0].Tokens) {
		t.Error("seeds 42 and 43 gave the same sample")
	}
}

func TestTopKTopPRespected(t *testing.T) {
	c, ts, _ := TinyTensors(models.TinyQwen3)
	m := mustLoad(t, models.TinyQwen3)
	ref := &refModel{c: c, ts: ts}
	prompt := m.Tokenizer().Encode("nucleus", true)
	for _, tc := range []SampleRequest{{TopK: 3}, {TopP: 0.5}, {TopK: 5, TopP: 0.6}} {
		tc.Prompt, tc.MaxTokens, tc.Temperature, tc.Seed, tc.NumSamples = prompt, 6, 1.5, seedp(3), 4
		resp := sample(t, m, tc)
		for si, seq := range resp.Sequences {
			logits := ref.logits(append(slices.Clone(prompt), seq.Tokens...)) // by causality, every position at once
			for i, tok := range seq.Tokens {
				allowed := allowedSet(logits[len(prompt)-1+i], tc.Temperature, tc.TopK, tc.TopP)
				if !allowed[tok] {
					t.Errorf("top_k=%d top_p=%g sample %d token %d: %d is outside the allowed set %v", tc.TopK, tc.TopP, si, i, tok, allowed)
				}
			}
		}
	}
}

// allowedSet is the plain definition of the top-k then top-p candidate set.
func allowedSet(logits []float64, temp float64, k int, p float64) map[int]bool {
	ls := refLogSoftmax(logits, 1/temp)
	order := make([]int, len(ls))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case ls[a] > ls[b]:
			return -1
		case ls[a] < ls[b]:
			return 1
		}
		return 0
	})
	if k > 0 {
		order = order[:k]
	}
	var total float64
	for _, i := range order {
		total += math.Exp(ls[i])
	}
	out := map[int]bool{}
	var cum float64
	for _, i := range order {
		out[i] = true
		cum += math.Exp(ls[i])
		if p > 0 && cum >= p*total*(1-1e-9) {
			break
		}
	}
	return out
}

func TestSamplerDistribution(t *testing.T) {
	logits := []float32{1, 2, 0.5, -1, 1.5}
	const temp, n = 0.8, 200000
	s := newSampler(len(logits), SampleRequest{Temperature: temp})
	r := newRNG(11)
	counts := make([]int, len(logits))
	for range n {
		tok, _ := s.pick(logits, r)
		counts[tok]++
	}
	ls := refLogSoftmax([]float64{1, 2, 0.5, -1, 1.5}, 1/temp)
	for i, c := range counts {
		p := math.Exp(ls[i])
		sd := math.Sqrt(p * (1 - p) / n)
		if got := float64(c) / n; math.Abs(got-p) > 5*sd {
			t.Errorf("token %d drawn with frequency %.4f, want %.4f ± %.4f", i, got, p, 5*sd)
		}
	}
}

func TestStopConditions(t *testing.T) {
	m := mustLoad(t, models.TinyLlama)
	prompt := m.Tokenizer().Encode("stop", true)
	base := SampleRequest{Prompt: prompt, MaxTokens: 30, Temperature: 1, Seed: seedp(5)}
	greedy := sample(t, m, base).Sequences[0].Tokens // seeded, so every run repeats it
	if len(greedy) != 30 {
		t.Fatalf("reference run gave %d tokens", len(greedy))
	}
	// Stop at the first token not seen before in the output, so the
	// expected cut is unambiguous for tokens, sequences and strings.
	cut := 1
	for cut < len(greedy) && slices.Contains(greedy[:cut], greedy[cut]) {
		cut++
	}
	if cut >= len(greedy)-1 {
		t.Fatalf("output %v has no usable stop point", greedy)
	}
	check := func(label string, req SampleRequest, want []int) {
		t.Helper()
		seq := sample(t, m, req).Sequences[0]
		if !slices.Equal(seq.Tokens, want) || seq.StopReason != StopReasonStop || len(seq.Logprobs) != len(want) {
			t.Errorf("%s: got %v (%s), want %v (stop)", label, seq.Tokens, seq.StopReason, want)
		}
	}
	r := base
	r.StopTokens = []int{greedy[cut]}
	check("stop token", r, greedy[:cut+1])
	r = base
	r.StopSequences = [][]int{{greedy[cut-1], greedy[cut]}}
	check("stop sequence", r, greedy[:cut+1])
	r = base
	r.StopStrings = []string{m.Tokenizer().Decode(greedy[cut-1:cut+1], true)}
	check("stop string", r, greedy[:cut+1])
	r = base
	r.StopFunc = func(gen []int) bool { return len(gen) == 5 }
	check("stop func", r, greedy[:5])

	r = base
	r.MaxTokens = 7
	seq := sample(t, m, r).Sequences[0]
	if !slices.Equal(seq.Tokens, greedy[:7]) || seq.StopReason != StopReasonLength {
		t.Errorf("max_tokens=7: %v (%s)", seq.Tokens, seq.StopReason)
	}
	r.MaxTokens = 0
	seq = sample(t, m, r).Sequences[0]
	if len(seq.Tokens) != 0 || seq.StopReason != StopReasonLength {
		t.Errorf("max_tokens=0: %v (%s)", seq.Tokens, seq.StopReason)
	}
}

func TestNumSamplesStopIndependently(t *testing.T) {
	m := mustLoad(t, models.TinyQwen3)
	resp := sample(t, m, SampleRequest{Prompt: m.Tokenizer().Encode("many", true), MaxTokens: 25, Temperature: 1.2,
		Seed: seedp(9), NumSamples: 6, StopFunc: func(gen []int) bool { return gen[len(gen)-1]%3 == 0 }})
	if len(resp.Sequences) != 6 {
		t.Fatalf("got %d sequences", len(resp.Sequences))
	}
	lengths := map[int]bool{}
	for i, s := range resp.Sequences {
		last := s.Tokens[len(s.Tokens)-1]
		if (s.StopReason == StopReasonStop) != (last%3 == 0) || (s.StopReason == StopReasonLength && len(s.Tokens) != 25) {
			t.Errorf("sample %d: %v ends with %s", i, s.Tokens, s.StopReason)
		}
		lengths[len(s.Tokens)] = true
	}
	if len(lengths) < 2 {
		t.Errorf("all samples stopped at the same length: %v", lengths)
	}
}

func TestCancellation(t *testing.T) {
	m := mustLoad(t, models.TinyLlama)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := m.Sample(ctx, SampleRequest{Prompt: []int{1, 2, 3}, MaxTokens: 1000, Temperature: 1,
		StopFunc: func(gen []int) bool {
			if len(gen) == 10 {
				cancel()
			}
			return false
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// Already cancelled: nothing runs, not even the prefill.
	_, err = m.Sample(ctx, SampleRequest{Prompt: make([]int, 1000), MaxTokens: 1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before prefill: err = %v", err)
	}
}

func TestRequestErrors(t *testing.T) {
	m := mustLoad(t, models.TinyLlama)
	for _, tc := range []struct {
		req  SampleRequest
		want string
	}{
		{SampleRequest{}, "prompt is empty"},
		{SampleRequest{Prompt: []int{300}}, "outside the vocabulary"},
		{SampleRequest{Prompt: []int{1}, MaxTokens: -1}, "max_tokens"},
		{SampleRequest{Prompt: []int{1}, Temperature: -1}, "temperature"},
		{SampleRequest{Prompt: []int{1}, MaxTokens: 5000}, "context"},
	} {
		if _, err := m.Sample(context.Background(), tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.req, err, tc.want)
		}
	}
}

func TestLlama3RopeScaling(t *testing.T) {
	// Llama 3.1 8B: theta 500000, head_dim 128, factor 8, low 1, high 4,
	// original context 8192. Pair i has f = 500000^(-i/64).
	c := Config{Shape: models.Shape{Family: models.Llama3, VocabSize: 1, Hidden: 4096, Intermediate: 1, Layers: 1, Heads: 32,
		KVHeads: 8, HeadDim: 128, RopeTheta: 500000}, RopeScaling: &RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}}
	inv := ropeInvFreq(c)
	for _, tc := range []struct {
		i    int
		want float64
		why  string
	}{
		// i=0: f=1, wavelength 2π < 8192/4: kept.
		{0, 1, "high frequency kept"},
		// i=16: f=500000^-0.25=0.0376060309, wavelength 167.08 < 2048: kept.
		{16, 0.0376060309, "high frequency kept"},
		// i=32: f=500000^-0.5=0.00141421356, wavelength 4442.88 in
		// [2048, 8192]: smooth=(8192/4442.88-1)/3=0.281283,
		// f' = f·((1-smooth)/8 + smooth) = 0.000524846161.
		{32, 0.000524846161, "interpolated"},
		// i=48: f=500000^-0.75=0.0000531829, wavelength 118143 > 8192: f/8.
		{48, 0.00000664786987, "low frequency divided by factor"},
	} {
		if got := inv[tc.i]; math.Abs(got-tc.want)/tc.want > 1e-6 {
			t.Errorf("inv_freq[%d] = %.9g, want %.9g (%s)", tc.i, got, tc.want, tc.why)
		}
	}
}

// TestLongGenerationMatchesReference runs past the KV cache's first
// reservation and past the tiny Llama's original rope context (256), in a
// batch of two, and checks every logprob against the reference.
func TestLongGenerationMatchesReference(t *testing.T) {
	c, ts, _ := TinyTensors(models.TinyLlama)
	m := mustLoad(t, models.TinyLlama)
	prompt := m.Tokenizer().Encode("long", true)
	resp := sample(t, m, SampleRequest{Prompt: prompt, MaxTokens: 300, Temperature: 0.9, Seed: seedp(1), NumSamples: 2})
	for _, seq := range resp.Sequences {
		if len(seq.Tokens) != 300 {
			t.Fatalf("got %d tokens", len(seq.Tokens))
		}
		checkRef(t, &refModel{c: c, ts: ts}, prompt, seq, 0.9, false)
	}
}

// TestPinnedOutputs pins seeded samples of both tiny models, so a change to
// the weights generator, the PRNG or the numerics (which would change every
// golden transcript built on them) is caught here first, on any machine and
// any GOMAXPROCS.
func TestPinnedOutputs(t *testing.T) {
	want := map[string][2]string{
		models.TinyLlama:    {`)=P$tu$PP%$$<PwP`, `G$Et\PoRyoBPt;oE`},
		models.TinyQwen3:    {`&3G#z{&GG&&"5Q{O`, `:&7wbUhG{o3:z3m7`},
		models.TinyQwen3MoE: {"!((\nwz\n((\n\n\n(({A", "(\n(uAASA|_((u(\\("},
		models.TinyGptOss:   {"####`r########mX", "H##_____xx9Br2XX"},
		models.TinyDeepSeek: {"*@N tu)NT!  @N{N", "@ NuVNiN{]@Nw@f?"},
	}
	for _, procs := range []int{1, 2, 3} {
		old := runtime.GOMAXPROCS(procs)
		for _, name := range testModels(t) {
			m := mustLoad(t, name)
			r := sample(t, m, SampleRequest{Prompt: m.Tokenizer().Encode("Tinker", true), MaxTokens: 16, Temperature: 1, Seed: seedp(2026), NumSamples: 2})
			for i, s := range r.Sequences {
				if got := m.Tokenizer().Decode(s.Tokens, true); got != want[name][i] {
					t.Errorf("GOMAXPROCS=%d %s sample %d: %q, want %q", procs, name, i, got, want[name][i])
				}
			}
		}
		runtime.GOMAXPROCS(old)
	}
}

// At temperature 1 a drawn token's logprob has the bits of the same
// token's prompt logprob (logit − logSumExp), whose sum runs in vector
// lanes: a serial sum in the sampler differed in the last bits.
func TestSamplerLogprobMatchesLogSumExp(t *testing.T) {
	r := newRNG(3)
	s := newSampler(1000, SampleRequest{Temperature: 1})
	logits := make([]float32, 1000)
	for k := range 20 {
		fill(logits, r, 4)
		tok, lp := s.pick(logits[:1000-k], r)
		if want := float64(logits[tok]) - logSumExp(logits[:1000-k], 1); lp != want {
			t.Fatalf("vocabulary %d: token %d logprob %v, logit − logSumExp %v", 1000-k, tok, lp, want)
		}
	}
}
