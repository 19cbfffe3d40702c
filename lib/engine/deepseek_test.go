package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// dsConfig is a DeepSeek-V3 small enough for finite differences: layer 0
// dense, layer 1 with 8 experts in 4 groups (2 kept), 2 per token, and
// two shared experts; q through the bottleneck or, with qLora false,
// q_proj and rotate-half rotary; YaRN with DeepSeek's mscale.
func dsConfig(qLora bool) Config {
	m := &models.MLA{QLoraRank: 12, KVLoraRank: 10, QKNopeDim: 6, QKRopeDim: 4, VHeadDim: 5}
	if !qLora {
		m.QLoraRank = 0
	}
	return Config{Shape: models.Shape{Family: models.DeepSeekV3, VocabSize: 40, Hidden: 16, Intermediate: 24, Layers: 2,
		Heads: 2, KVHeads: 2, HeadDim: 10, RMSNormEps: 1e-6, RopeTheta: 10000, MaxPositionEmbeddings: 128,
		Experts: 8, ExpertsPerToken: 2, MoEIntermediate: 6, SharedExperts: 2, FirstDenseLayers: 1, MLA: m},
		NormTopKProb: qLora, BOSTokenID: -1,
		Routing: &DeepSeekRouting{Groups: 4, TopKGroups: 2, ScalingFactor: 2.5, RopeInterleave: qLora},
		RopeScaling: &RopeScaling{Type: "yarn", Factor: 8, BetaFast: 32, BetaSlow: 1, OriginalMaxPositionEmbeddings: 32,
			MScale: 0.7, MScaleAllDim: 1}}
}

// dsDirModel writes a random small DeepSeek-V3 as a Hugging Face
// directory and loads it from there. The router's weights are 4 times
// randomTensors' so that sigmoid scores spread and, with seed 148, the
// routing keeps clear of ties (dsMargin).
func dsDirModel(t *testing.T, qLora bool) (*Model, Tensors) {
	t.Helper()
	c := dsConfig(qLora)
	ts := randomTensors(c, 148)
	for n, x := range ts {
		if strings.HasSuffix(n, "mlp.gate.weight") {
			for i := range x.Data {
				x.Data[i] *= 4
			}
		}
	}
	dir := t.TempDir()
	writeHFDir(t, dir, c, ts, safetensors.F32, 2)
	return loadExact(t, dir, c), ts
}

// dsAdapter is a trainer's adapter on every matrix the service adapts,
// with random lora_B.
func dsAdapter(t *testing.T, m *Model) *Trainer {
	tr := mustTrainer(t, m, LoRAConfig{Rank: 3, Alpha: 6, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 5})
	randomizeB(t, tr, 3, 0.3)
	return tr
}

// The engine matches the float64 reference on DeepSeek models read from
// Hugging Face directories (the tiny built-in one and small ones with and
// without q_lora_rank), base and with an adapter on every adapted matrix.
func TestDeepSeekMatchesReference(t *testing.T) {
	c, ts, err := TinyTensors(models.TinyDeepSeek)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeHFDir(t, dir, c, ts, safetensors.F32, 3)
	tiny := loadExact(t, dir, c)
	small, sts := dsDirModel(t, true)
	plain, pts := dsDirModel(t, false)
	for _, tc := range []struct {
		name string
		m    *Model
		ts   Tensors
	}{{"tiny", tiny, ts}, {"qlora", small, sts}, {"qproj", plain, pts}} {
		tr := dsAdapter(t, tc.m)
		lm, err := tr.Sampler()
		if err != nil {
			t.Fatal(err)
		}
		prompt := testData(tc.m.cfg.VocabSize, 3, 11)[0].ModelInput
		t.Run(tc.name+"/base", func(t *testing.T) { checkSampleRef(t, tc.m, &refModel{c: tc.m.cfg, ts: tc.ts}, prompt) })
		t.Run(tc.name+"/lora", func(t *testing.T) {
			checkSampleRef(t, lm, &refModel{c: tc.m.cfg, ts: tc.ts, lora: tr.Adapter(), scale: tr.scale}, prompt)
		})
	}
}

// Every loss's gradient, every adapter tensor included, against float64
// central finite differences of the reference, with and without the
// query bottleneck; and each target alone.
func TestDeepSeekGradientsMatchFiniteDifferences(t *testing.T) {
	nativeOnly(t)
	for _, qLora := range []bool{true, false} {
		m, base := dsDirModel(t, qLora)
		if g := dsMargin(t, m, base); g < 0.02 {
			t.Fatalf("qlora=%v: a routing gap at a top-k boundary is only %.3g: a ±1e-3 step may change the routing (pick another seed)", qLora, g)
		}
		checkAllLossesFD(t, fmt.Sprintf("qlora=%v", qLora), m, base)
	}
	m, base := dsDirModel(t, true)
	checkPerTarget(t, m, base)
}

// dsMargin is the smallest routing gap (an expert's or a group's) at a
// top-k boundary over the data and adapters of checkAllLossesFD and
// checkPerTarget.
func dsMargin(t *testing.T, m *Model, base Tensors) float64 {
	g := routingMargin(t, m, base)
	for _, c := range []LoRAConfig{{TrainAttn: true}, {TrainMLP: true}, {TrainUnembed: true}} {
		c.Rank, c.Alpha, c.Seed = 2, 4, 1
		tr := mustTrainer(t, m, c)
		randomizeB(t, tr, 4, 0.3)
		ref := &refModel{c: m.cfg, ts: base, lora: tr.Adapter(), scale: tr.scale}
		ref.logits(testData(m.cfg.VocabSize, 2, 6)[0].ModelInput)
		g = min(g, *ref.margin)
	}
	return g
}

// The adapter has the service's modules (lib/peft's shapes for the
// DeepSeek-V3 family) and target_modules names them.
func TestDeepSeekAdapterModules(t *testing.T) {
	m := mustLoad(t, models.TinyDeepSeek)
	tr := mustTrainer(t, m, LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, Seed: 3})
	ts := tr.Adapter()
	for name, shape := range map[string][]int{
		"model.layers.0.self_attn.q_a_proj.lora_B.weight":           {48, 4},
		"model.layers.0.self_attn.kv_a_proj_with_mqa.lora_B.weight": {40, 4},
		"model.layers.2.self_attn.o_proj.lora_A.weight":             {4, 64},
		"model.layers.0.mlp.down_proj.lora_A.weight":                {4, 128},
		"model.layers.1.mlp.shared_experts.up_proj.lora_B.weight":   {32, 4},
	} {
		if got := ts["base_model.model."+name].Shape; !slices.Equal(got, shape) {
			t.Errorf("%s: shape %v, want %v", name, got, shape)
		}
	}
	if _, ok := ts["base_model.model.model.layers.1.mlp.gate_proj.lora_A.weight"]; ok {
		t.Error("an MoE layer has a dense gate_proj adapter")
	}
	want := []string{"q_a_proj", "kv_a_proj_with_mqa", "o_proj", "gate_proj", "up_proj", "down_proj", "w1", "w2", "w3"}
	if got := tr.AdapterConfig(models.TinyDeepSeek).TargetModules; !slices.Equal(got, want) {
		t.Errorf("target modules %v, want %v", got, want)
	}
	bad := Tensors{"base_model.model.model.layers.0.self_attn.q_b_proj.lora_A.weight": {Shape: []int{4, 48}, Data: make([]float32, 192)},
		"base_model.model.model.layers.0.self_attn.q_b_proj.lora_B.weight": {Shape: []int{96, 4}, Data: make([]float32, 384)}}
	if _, err := NewLoRA(m.cfg, bad, 4, 8, false); err == nil || !strings.Contains(err.Error(), "q_b_proj") {
		t.Errorf("q_b_proj adapter: err %v", err)
	}
}

// config.json: DeepSeek-V3 and Kimi K2 read as one architecture, with
// q_lora_rank null, moe_layer_freq and DeepSeek's YaRN; bad values are
// refused in one line.
func TestDeepSeekConfig(t *testing.T) {
	c := dsConfig(false)
	js, err := c.HFConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"q_lora_rank": null`) || strings.Contains(string(js), `"head_dim"`) {
		t.Errorf("config.json: want q_lora_rank null and no head_dim:\n%s", js)
	}
	kimi := strings.Replace(string(js), `"model_type": "deepseek_v3"`, `"model_type": "kimi_k2"`, 1)
	got, err := ParseConfig([]byte(kimi))
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("kimi_k2: %+v, %v; want %+v", got, err, c)
	}
	// Fields left out take DeepseekV3Config's defaults (DeepSeek-V3's values).
	def, err := ParseConfig([]byte(`{"model_type": "deepseek_v3", "vocab_size": 1000, "hidden_size": 7168, "intermediate_size": 18432,
		"num_hidden_layers": 4, "num_attention_heads": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 2048}`))
	if err != nil || *def.MLA != (models.MLA{QLoraRank: 1536, KVLoraRank: 512, QKNopeDim: 128, QKRopeDim: 64, VHeadDim: 128}) ||
		*def.Routing != (DeepSeekRouting{Groups: 8, TopKGroups: 4, ScalingFactor: 2.5, RopeInterleave: true}) ||
		def.Experts != 256 || def.SharedExperts != 1 || def.FirstDenseLayers != 3 || !def.NormTopKProb || def.HeadDim != 192 {
		t.Errorf("defaults: %+v %+v %+v, %v", def.Shape, def.MLA, def.Routing, err)
	}
	freq, err := ParseConfig([]byte(strings.Replace(string(js), `"moe_layer_freq": 1`, `"moe_layer_freq": 2`, 1)))
	if err != nil || !slices.Equal(freq.MLPOnlyLayers, []int{1}) || freq.IsMoELayer(1) || !freq.IsMoELayer(2) {
		t.Errorf("moe_layer_freq 2: mlp_only %v, err %v", freq.MLPOnlyLayers, err)
	}
	for _, tc := range []struct{ from, to, want string }{
		{`"n_group": 4`, `"n_group": 3`, "n_group"},
		{`"scoring_func": "sigmoid"`, `"scoring_func": "softmax"`, "scoring_func"},
		{`"topk_group": 2`, `"topk_group": 5`, "topk_group"},
		{`"v_head_dim": 5`, `"v_head_dim": 11`, "v_head_dim"},
		{`"kv_lora_rank": 10`, `"kv_lora_rank": 1073741824`, "kv_lora_rank"},
		{`"n_routed_experts": 8`, `"n_routed_experts": 0`, "n_routed_experts"},
		{`"n_shared_experts": 2`, `"n_shared_experts": 5`, "n_shared_experts"},
	} {
		if !strings.Contains(string(js), tc.from) {
			t.Fatalf("config.json has no %s", tc.from)
		}
		_, err := ParseConfig([]byte(strings.Replace(string(js), tc.from, tc.to, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want one line naming %s", tc.to, err, tc.want)
		}
	}
}

// dsLoRAModules adds randomLoRA's modules of DeepSeek layer i (prefix p),
// placed as the service places them (routed experts in the shared-outer
// form).
func dsLoRAModules(c Config, i int, p string, addN func(module string, in, out, nA, nB int)) {
	m, h := c.MLA, c.Hidden
	q, qOut := "q_a_proj", m.QLoraRank
	if m.QLoraRank == 0 {
		q, qOut = "q_proj", c.Heads*c.HeadDim
	}
	addN(p+"self_attn."+q, h, qOut, 0, 0)
	addN(p+"self_attn.kv_a_proj_with_mqa", h, m.KVLoraRank+m.QKRopeDim, 0, 0)
	addN(p+"self_attn.o_proj", c.Heads*m.VHeadDim, h, 0, 0)
	mlp := p + "mlp."
	if c.IsMoELayer(i) {
		addN(mlp+"experts.w1", h, c.MoEIntermediate, 1, c.Experts)
		addN(mlp+"experts.w2", c.MoEIntermediate, h, c.Experts, 1)
		addN(mlp+"experts.w3", h, c.MoEIntermediate, 1, c.Experts)
		mlp += "shared_experts."
	}
	w := c.mlpWidth(i)
	addN(mlp+"gate_proj", h, w, 0, 0)
	addN(mlp+"up_proj", h, w, 0, 0)
	addN(mlp+"down_proj", w, h, 0, 0)
}

// Training resumes bit-exactly from saved state, and gradients do not
// depend on how data split into calls, as for the other families.
func TestDeepSeekResumeAndBatchSplit(t *testing.T) {
	t.Run("resume", func(t *testing.T) { checkResume(t, models.TinyDeepSeek) })
	t.Run("split", func(t *testing.T) { checkBatchSplit(t, models.TinyDeepSeek) })
}

// The catalog's DeepSeek V3.1 and Kimi K2 shapes are shapes the engine
// runs, and config.json carries them through unchanged.
func TestDeepSeekCatalogShapes(t *testing.T) {
	n := 0
	for _, a := range models.All() {
		if a.Family != models.DeepSeekV3 || models.IsTiny(a.Name) {
			continue // the tiny one has its own routing (TinyConfig)
		}
		n++
		c := Config{Shape: a.Shape, BOSTokenID: -1, NormTopKProb: true,
			Routing: &DeepSeekRouting{Groups: 8, TopKGroups: 4, ScalingFactor: 2.5, RopeInterleave: true}}
		b, err := c.HFConfigJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseConfig(b)
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		if !reflect.DeepEqual(got.Shape, a.Shape) {
			t.Errorf("%s: config.json round trip:\n got %+v\nwant %+v", a.Name, got.Shape, a.Shape)
		}
	}
	if n < 5 {
		t.Errorf("%d DeepSeek-V3 catalog models, want the DeepSeek V3.1 and Kimi entries", n)
	}
}

// A model directory whose config.json says kimi_k2 (Kimi K2's
// model_type) loads as the DeepSeek-V3 it is and computes the same bits.
func TestKimiK2Dir(t *testing.T) {
	c, ts, _ := TinyTensors(models.TinyDeepSeek)
	dir := t.TempDir()
	writeHFDir(t, dir, c, ts, safetensors.F32, 1)
	cfg, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), `"model_type": "deepseek_v3"`, `"model_type": "kimi_k2"`, 1))
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	kimi := loadExact(t, dir, c)
	m := mustLoad(t, models.TinyDeepSeek)
	prompt := m.Tokenizer().Encode("Kimi", true)
	if a, b := promptLogprobs(t, m, prompt), promptLogprobs(t, kimi, prompt); !slices.Equal(a, b) {
		t.Errorf("kimi_k2 directory logprobs %v, built-in %v", b, a)
	}
}
