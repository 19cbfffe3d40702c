package engine

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// moeConfig is a Qwen3-MoE small enough for finite differences: 4
// experts, 2 per token, layer 1 dense (mlp_only_layers), untied lm_head.
func moeConfig(norm bool) Config {
	return Config{Shape: models.Shape{Family: models.Qwen3MoE, VocabSize: 40, Hidden: 16, Intermediate: 24, Layers: 3,
		Heads: 4, KVHeads: 2, HeadDim: 8, RMSNormEps: 1e-5, RopeTheta: 10000, MaxPositionEmbeddings: 128,
		Experts: 4, ExpertsPerToken: 2, MoEIntermediate: 12, DecoderSparseStep: 1, MLPOnlyLayers: []int{1}},
		NormTopKProb: norm, BOSTokenID: -1}
}

// moeDirModel writes a random small Qwen3-MoE as a Hugging Face directory
// (config.json and safetensors) and loads it from there.
func moeDirModel(t *testing.T, norm bool) (*Model, Tensors) {
	t.Helper()
	c := moeConfig(norm)
	ts := randomTensors(c, 24) // a seed whose routing keeps clear of ties (routingMargin)
	dir := t.TempDir()
	writeHFDir(t, dir, c, ts, safetensors.F32, 2)
	return loadExact(t, dir, c), ts
}

// loadExact loads dir and requires its config to read back as c.
func loadExact(t *testing.T, dir string, c Config) *Model {
	t.Helper()
	m, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Config(), c) {
		t.Fatalf("config.json round trip: %+v, want %+v", m.Config(), c)
	}
	return m
}

func TestMoELayers(t *testing.T) {
	c := moeConfig(true)
	for i, want := range []bool{true, false, true} {
		if c.IsMoELayer(i) != want {
			t.Errorf("layer %d: IsMoELayer %v", i, !want)
		}
	}
	c.MLPOnlyLayers, c.DecoderSparseStep = nil, 2
	if c.IsMoELayer(0) || !c.IsMoELayer(1) || c.IsMoELayer(2) {
		t.Error("decoder_sparse_step 2: want experts in layer 1 only")
	}
}

// The engine matches the float64 reference on a model read from a
// Hugging Face directory, with and without norm_topk_prob, with the base
// weights alone and with an adapter on every matrix including the experts.
func TestMoEMatchesReference(t *testing.T) {
	for _, norm := range []bool{false, true} {
		m, ts := moeDirModel(t, norm)
		c := m.Config()
		lts := randomLoRA(c, 3, 5, false)
		l, err := NewLoRA(c, lts, 3, 6, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			m    *Model
			ref  *refModel
		}{{"base", m, &refModel{c: c, ts: ts}}, {"lora", m.WithLoRA(l), &refModel{c: c, ts: ts, lora: lts, scale: 2}}} {
			t.Run(fmt.Sprintf("norm=%v/%s", norm, tc.name), func(t *testing.T) {
				prompt := testData(c.VocabSize, 3, 9)[0].ModelInput
				checkSampleRef(t, tc.m, tc.ref, prompt)
			})
		}
	}
}

// Every loss's gradient, experts' adapters included, against float64
// central finite differences of the reference; and each target alone.
func TestMoEGradientsMatchFiniteDifferences(t *testing.T) {
	nativeOnly(t)
	for _, norm := range []bool{false, true} {
		m, base := moeDirModel(t, norm)
		if g := routingMargin(t, m, base); g < 0.02 {
			t.Fatalf("norm=%v: a router logit gap at the top-k boundary is only %.3g: a ±1e-3 step may change the routing (pick another seed)", norm, g)
		}
		checkAllLossesFD(t, fmt.Sprintf("norm=%v", norm), m, base)
	}
	m, base := moeDirModel(t, true)
	checkPerTarget(t, m, base)
}

// The experts' adapter tensors are stacked in the service's shared-outer
// form as lib/peft shapes them: the hidden-side factor (w1's and w3's
// lora_A, w2's lora_B) one slice for all experts, the other per expert.
func TestMoEAdapterShapes(t *testing.T) {
	m := mustLoad(t, models.TinyQwen3MoE)
	tr := mustTrainer(t, m, LoRAConfig{Rank: 4, TrainMLP: true, Seed: 3})
	ts := tr.Adapter()
	for name, want := range map[string][]int{
		"w1.lora_A": {1, 4, 128}, "w1.lora_B": {8, 64, 4},
		"w3.lora_A": {1, 4, 128}, "w3.lora_B": {8, 64, 4},
		"w2.lora_A": {8, 4, 64}, "w2.lora_B": {1, 128, 4},
	} {
		if got := ts["base_model.model.model.layers.2.mlp.experts."+name+".weight"].Shape; !slices.Equal(got, want) {
			t.Errorf("%s shape %v, want %v", name, got, want)
		}
	}
	if got := tr.AdapterConfig(models.TinyQwen3MoE).TargetModules; !slices.Equal(got, []string{"w1", "w2", "w3"}) {
		t.Errorf("target modules %v", got)
	}
	if len(ts) != 4*3*2 {
		t.Errorf("%d adapter tensors, want 24", len(ts))
	}
}

// An adapter saved with one hidden-side factor per expert (tinker before
// the shared-outer form) still samples as the shared adapter it repeats,
// and resuming training from it is refused in one line that says why.
func TestMoEPerExpertAdapter(t *testing.T) {
	m := mustLoad(t, models.TinyQwen3MoE)
	tr := mustTrainer(t, m, LoRAConfig{Rank: 2, TrainMLP: true, Seed: 1})
	randomizeB(t, tr, 2, 0.3)
	shared := tr.Adapter()
	per := Tensors{}
	for n, x := range shared {
		if len(x.Shape) == 3 && x.Shape[0] == 1 {
			x = Tensor{Shape: []int{8, x.Shape[1], x.Shape[2]}, Data: slices.Repeat(x.Data, 8)}
		}
		per[n] = x
	}
	ls, err := NewLoRA(m.cfg, shared, 2, 32, false)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := NewLoRA(m.cfg, per, 2, 32, false)
	if err != nil {
		t.Fatal(err)
	}
	prompt := testData(m.cfg.VocabSize, 5, 12)[0].ModelInput
	if a, b := promptLogprobs(t, m.WithLoRA(ls), prompt), promptLogprobs(t, m.WithLoRA(lp), prompt); !slices.Equal(a, b) {
		t.Errorf("per-expert copy logprobs %v, shared %v", b[:3], a[:3])
	}
	if err := tr.LoadAdapter(per); err == nil || !strings.Contains(err.Error(), "training cannot resume from it") {
		t.Errorf("resuming from per-expert factors: err %v", err)
	}
}

// fuseExperts rewrites per-expert tensors as transformers 5.x stores
// them: mlp.experts.gate_up_proj [E, 2I, H] and mlp.experts.down_proj
// [E, H, I].
func fuseExperts(c Config, ts Tensors) Tensors {
	out := Tensors{}
	for n, x := range ts {
		if !strings.Contains(n, ".mlp.experts.") {
			out[n] = x
		}
	}
	for i := range c.Layers {
		if !c.IsMoELayer(i) {
			continue
		}
		p := fmt.Sprintf("model.layers.%d.", i)
		var gu, d []float32
		for e := range c.Experts {
			gu = append(gu, ts[expertName(p, e, "gate_proj")].Data...)
			gu = append(gu, ts[expertName(p, e, "up_proj")].Data...)
			d = append(d, ts[expertName(p, e, "down_proj")].Data...)
		}
		out[p+"mlp.experts.gate_up_proj"] = Tensor{Shape: []int{c.Experts, 2 * c.MoEIntermediate, c.Hidden}, Data: gu}
		out[p+"mlp.experts.down_proj"] = Tensor{Shape: []int{c.Experts, c.Hidden, c.MoEIntermediate}, Data: d}
	}
	return out
}

// A directory in transformers 5.x's fused expert layout computes what the
// per-expert layout does, bit for bit; so does an adapter whose experts
// are one PEFT module each (experts.N.gate_proj) instead of stacked.
func TestMoELayouts(t *testing.T) {
	c, ts, err := TinyTensors(models.TinyQwen3MoE)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeHFDir(t, dir, c, fuseExperts(c, ts), safetensors.BF16, 2)
	fused, err := LoadDirWith(dir, LoadOptions{BF16: BF16Keep})
	if err != nil {
		t.Fatal(err)
	}
	if fused.w.layers[1].moe.experts[3].up.bf == nil {
		t.Error("a fused bfloat16 expert was widened to float32 under BF16Keep")
	}
	per := t.TempDir()
	writeHFDir(t, per, c, ts, safetensors.BF16, 1)
	plain, err := LoadDirWith(per, LoadOptions{BF16: BF16Keep})
	if err != nil {
		t.Fatal(err)
	}
	prompt := testData(c.VocabSize, 5, 30)[0].ModelInput
	if a, b := promptLogprobs(t, fused, prompt), promptLogprobs(t, plain, prompt); !slices.Equal(a, b) {
		t.Errorf("fused layout logprobs %v, per-expert %v", a[:3], b[:3])
	}
	stacked := randomLoRA(c, 3, 8, false)
	split := Tensors{}
	for n, x := range stacked {
		kind, ok := strings.CutPrefix(n[strings.Index(n, "mlp.experts.")+len("mlp.experts."):], "w")
		if !strings.Contains(n, "mlp.experts.w") || !ok {
			split[n] = x
			continue
		}
		proj := map[byte]string{'1': "gate_proj", '2': "down_proj", '3': "up_proj"}[kind[0]]
		pre, half, _ := strings.Cut(n, "mlp.experts.w"+kind[:1]+".")
		each := len(x.Data) / x.Shape[0]
		for e := range c.Experts {
			s := e % x.Shape[0] // a shared factor is every expert's
			split[fmt.Sprintf("%smlp.experts.%d.%s.%s", pre, e, proj, half)] = Tensor{Shape: x.Shape[1:], Data: x.Data[s*each : (s+1)*each]}
		}
	}
	la, err := NewLoRA(c, stacked, 3, 6, false)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := NewLoRA(c, split, 3, 6, false)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := promptLogprobs(t, plain.WithLoRA(la), prompt), promptLogprobs(t, plain.WithLoRA(lb), prompt); !slices.Equal(a, b) {
		t.Errorf("per-expert adapter logprobs %v, stacked %v", b[:3], a[:3])
	}
	if _, err := NewLoRA(c, Tensors{"base_model.model.model.layers.0.mlp.experts.8.gate_proj.lora_A.weight": {Shape: []int{3, 128}, Data: make([]float32, 384)},
		"base_model.model.model.layers.0.mlp.experts.8.gate_proj.lora_B.weight": {Shape: []int{64, 3}, Data: make([]float32, 192)}}, 3, 6, false); err == nil ||
		!strings.Contains(err.Error(), "has 8 experts") {
		t.Errorf("expert 8 of 8: err %v", err)
	}
}

// routingMargin is the smallest router logit gap at the top-k boundary
// over checkAllLossesFD's data, adapter and model.
func routingMargin(t *testing.T, m *Model, base Tensors) float64 {
	tr := mustTrainer(t, m, LoRAConfig{Rank: 3, Alpha: 6, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 5})
	randomizeB(t, tr, 3, 0.3)
	ref := &refModel{c: m.cfg, ts: base, lora: tr.Adapter(), scale: tr.scale}
	for _, d := range testData(m.cfg.VocabSize, 9, 5, 7) {
		ref.logits(d.ModelInput)
	}
	return *ref.margin
}

// checkSampleRef samples 10 tokens after prompt and checks them, their
// logprobs and the prompt's against the reference.
func checkSampleRef(t *testing.T, m *Model, ref *refModel, prompt []int) {
	t.Helper()
	resp := sample(t, m, SampleRequest{Prompt: prompt, MaxTokens: 10, Temperature: 1, Seed: seedp(4), PromptLogprobs: true})
	checkRef(t, ref, prompt, resp.Sequences[0], 1, true)
	logits := ref.logits(prompt)
	for i := 1; i < len(prompt); i++ {
		want := refLogSoftmax(logits[i-1], 1)[prompt[i]]
		if d := math.Abs(float64(*resp.PromptLogprobs[i]) - want); d > tol {
			t.Errorf("prompt logprob %d: engine %.6f, reference %.6f", i, *resp.PromptLogprobs[i], want)
		}
	}
}
