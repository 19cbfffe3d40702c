package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// writeModelDir writes a tiny model as a Hugging Face directory in dtype,
// split into shards when shards > 1 (with model.safetensors.index.json).
func writeModelDir(t *testing.T, dir, name string, dtype safetensors.DType, shards int) {
	t.Helper()
	c, ts, err := TinyTensors(name)
	if err != nil {
		t.Fatal(err)
	}
	writeHFDir(t, dir, c, ts, dtype, shards)
}

// writeHFDir writes config c and tensors ts as a Hugging Face directory.
func writeHFDir(t *testing.T, dir string, c Config, ts Tensors, dtype safetensors.DType, shards int) {
	t.Helper()
	cfg, err := c.HFConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	parts := make([][]safetensors.Tensor, shards)
	for i, n := range slices.Sorted(maps.Keys(ts)) {
		x, err := safetensors.FromFloat32(n, dtype, ts[n].Shape, ts[n].Data)
		if err != nil {
			t.Fatal(err)
		}
		parts[i%shards] = append(parts[i%shards], x)
	}
	if err := safetensors.WriteDir(dir, parts); err != nil {
		t.Fatal(err)
	}
}

func promptLogprobs(t *testing.T, m *Model, prompt []int) []float64 {
	t.Helper()
	r := sample(t, m, SampleRequest{Prompt: prompt, MaxTokens: 1, PromptLogprobs: true})
	out := make([]float64, len(prompt)-1)
	for i := range out {
		out[i] = float64(*r.PromptLogprobs[i+1])
	}
	return out
}

func TestLoadDirDTypes(t *testing.T) {
	for _, name := range testModels(t) {
		t.Run(name, func(t *testing.T) {
			builtin := mustLoad(t, name)
			prompt := builtin.Tokenizer().Encode("weights from disk", true)
			want := promptLogprobs(t, builtin, prompt)
			for _, tc := range []struct {
				dtype  safetensors.DType
				shards int
				tol    float64
			}{
				{safetensors.F32, 1, 0},    // exact: same float32 bits
				{safetensors.F32, 3, 0},    // sharded with an index
				{safetensors.BF16, 1, 0.1}, // 8-bit mantissa weights
				{safetensors.F16, 2, 0.03},
			} {
				dir := t.TempDir()
				writeModelDir(t, dir, name, tc.dtype, tc.shards)
				m, err := LoadDirWith(dir, LoadOptions{BF16: BF16Keep})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(m.Config(), builtin.Config()) {
					t.Errorf("%s: config.json round trip: %+v, want %+v", tc.dtype, m.Config(), builtin.Config())
				}
				got := promptLogprobs(t, m, prompt)
				var worst float64
				for i := range got {
					worst = math.Max(worst, math.Abs(got[i]-want[i]))
				}
				tol := tc.tol
				if tc.dtype == safetensors.BF16 && builtin.Config().Experts > 0 {
					tol = 0.25 // rounding may move a token to another expert: a jump, not a drift
				}
				if tc.dtype == safetensors.BF16 && builtin.Config().Routing != nil {
					tol = 2 // DeepSeek's: to another group of experts, weighted by routed_scaling_factor 2.5
				}
				if worst > tol {
					t.Errorf("%s x%d: prompt logprobs differ by up to %g (tolerance %g)", tc.dtype, tc.shards, worst, tol)
				}
				if testing.Verbose() {
					t.Logf("%s x%d: max prompt logprob difference %.3g", tc.dtype, tc.shards, worst)
				}
				if tc.dtype == safetensors.BF16 {
					if worst == 0 {
						t.Errorf("bf16 weights gave bit-identical logprobs; were they really rounded?")
					}
					// Matrices kept as bfloat16 compute exactly what their
					// float32 widening does.
					if m.w.layers[0].o.bf == nil {
						t.Error("bf16 matrices were widened at load time")
					}
					c, ts, _ := TinyTensors(name)
					for n, tt := range ts {
						r := make([]float32, len(tt.Data))
						for i, v := range tt.Data {
							r[i] = safetensors.BF16ToFloat32(safetensors.Float32ToBF16(v))
						}
						ts[n] = Tensor{Shape: tt.Shape, Data: r}
					}
					widened, err := New(name, c, ts)
					if err != nil {
						t.Fatal(err)
					}
					if w := promptLogprobs(t, widened, prompt); !slices.Equal(w, got) {
						t.Error("bf16 kernel and widened float32 weights disagree")
					}
				}
			}
		})
	}
}

func TestLoadDirErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("empty dir: %v", err)
	}
	writeModelDir(t, dir, models.TinyQwen3, safetensors.F32, 1)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"kimi_k25"}`), 0o644)
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "no text_config") {
		t.Errorf("kimi_k25: %v", err)
	}
	// A config that disagrees with the weights names the tensor.
	c, _ := TinyConfig(models.TinyQwen3)
	c.Intermediate = 100
	b, _ := c.HFConfigJSON()
	os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644)
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "mlp.gate_proj.weight has shape") {
		t.Errorf("shape mismatch: %v", err)
	}
}

func TestFindModelDir(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HOME", filepath.Join(cache, "unused"))
	if _, err := FindModelDir("Org/Missing"); err == nil || !strings.Contains(err.Error(), "hf download Org/Missing") {
		t.Errorf("missing model: %v", err)
	}
	repo := filepath.Join(cache, "models--Org--Tiny-Model")
	snap := filepath.Join(repo, "snapshots", "abc123")
	stale := filepath.Join(repo, "snapshots", "000old") // sorts first; incomplete
	for _, d := range []string{snap, stale, filepath.Join(repo, "refs")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(stale, "config.json"), []byte("{}"), 0o644)
	writeModelDir(t, snap, models.TinyLlama, safetensors.BF16, 1)
	os.WriteFile(filepath.Join(repo, "refs", "main"), []byte("abc123\n"), 0o644)
	got, err := FindModelDir("Org/Tiny-Model")
	if err != nil || got != snap {
		t.Fatalf("FindModelDir = %q, %v; want %q", got, err, snap)
	}
	m, err := LoadDir(got)
	if err != nil || m.Config().Family != models.Llama3 {
		t.Fatalf("LoadDir(found) = %v", err)
	}
	if m.w.layers[0].q.bf != nil {
		t.Error("BF16Auto kept bfloat16 for a tiny model (only models over 1B parameters should)")
	}
}

func TestPEFTAdapterDir(t *testing.T) {
	base := mustLoad(t, models.TinyQwen3)
	prompt := base.Tokenizer().Encode("adapter", true)
	want := sample(t, base, SampleRequest{Prompt: prompt, MaxTokens: 10, PromptLogprobs: true})

	// A fresh adapter as the local server writes it: B is zero.
	dir := t.TempDir()
	plan, err := peft.NewPlan(peft.Config{BaseModel: models.TinyQwen3, Rank: 8, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	tuned, err := base.WithAdapter(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := tuned.LoRA().Modules(); n != 7*base.Config().Layers+1 {
		t.Errorf("adapter modules = %d", n)
	}
	got := sample(t, tuned, SampleRequest{Prompt: prompt, MaxTokens: 10, PromptLogprobs: true})
	if !slices.Equal(got.Sequences[0].Tokens, want.Sequences[0].Tokens) || !slices.Equal(got.Sequences[0].Logprobs, want.Sequences[0].Logprobs) {
		t.Error("a freshly initialised adapter (B = 0) changed the output")
	}

	// Rewrite the weights with non-zero B: the output must move.
	c := base.Config()
	lts := randomLoRA(c, 8, 5, false)
	var out []safetensors.Tensor
	for n, tt := range lts {
		data, _ := safetensors.EncodeFloat32(safetensors.BF16, tt.Data)
		out = append(out, safetensors.Tensor{Name: n, DType: safetensors.BF16, Shape: []int64{int64(tt.Shape[0]), int64(tt.Shape[1])}, Data: data})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	f, err := os.Create(filepath.Join(dir, peft.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := safetensors.Write(f, out, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	moved, err := base.WithAdapter(dir)
	if err != nil {
		t.Fatal(err)
	}
	g2 := sample(t, moved, SampleRequest{Prompt: prompt, MaxTokens: 10, PromptLogprobs: true})
	var diff float64
	for i := 1; i < len(prompt); i++ {
		diff = math.Max(diff, math.Abs(float64(*g2.PromptLogprobs[i]-*want.PromptLogprobs[i])))
	}
	if diff < 0.01 {
		t.Errorf("non-zero B moved prompt logprobs by only %g", diff)
	}

	// Wrong base model: a clear shape error.
	llama := mustLoad(t, models.TinyLlama)
	if _, err := llama.WithAdapter(dir); err == nil || !strings.Contains(err.Error(), "lora: 0.down_proj lora_A has shape [8 384], want [8 192]") {
		t.Errorf("adapter for another model: %v", err)
	}
	cfgPath := filepath.Join(dir, peft.ConfigFile)
	raw, _ := os.ReadFile(cfgPath)
	var ac map[string]any
	json.Unmarshal(raw, &ac)
	ac["target_modules"] = []string{"q_proj"}
	raw, _ = json.Marshal(ac)
	os.WriteFile(cfgPath, raw, 0o644)
	if _, err := base.WithAdapter(dir); err == nil || !strings.Contains(err.Error(), "target_modules [q_proj] does not list") {
		t.Errorf("adapter with undeclared modules: %v", err)
	}
	if _, err := base.WithAdapter(t.TempDir()); err == nil || !strings.Contains(err.Error(), peft.ConfigFile) {
		t.Errorf("missing adapter: %v", err)
	}
}

func TestSampleConcurrentCallsAgree(t *testing.T) {
	m := mustLoad(t, models.TinyLlama)
	req := SampleRequest{Prompt: []int{72, 105}, MaxTokens: 20, Temperature: 1, Seed: seedp(77)}
	want := sample(t, m, req)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			got, err := m.Sample(context.Background(), req)
			if err == nil && !slices.Equal(got.Sequences[0].Logprobs, want.Sequences[0].Logprobs) {
				err = fmt.Errorf("concurrent call gave %v, want %v", got.Sequences[0].Tokens, want.Sequences[0].Tokens)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestPool(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	dir := t.TempDir()
	writeModelDir(t, dir, models.TinyLlama, safetensors.F32, 1)
	p := &Pool{Dirs: map[string]string{"org/explicit": dir}}
	a, err := p.Model("org/explicit")
	if err != nil || a.Name() != "org/explicit" {
		t.Fatalf("explicit dir: %v", err)
	}
	if b, _ := p.Model("org/explicit:peft:1"); b != a {
		t.Error("second lookup loaded the model again")
	}
	if m, err := p.Model(models.TinyQwen3); err != nil || m.Tokenizer() == nil {
		t.Fatalf("tiny model: %v", err)
	}
	if _, err := p.Model("test-org/Not-Downloaded"); err == nil || !strings.Contains(err.Error(), "not available locally") {
		t.Errorf("missing weights: %v", err)
	}
	// Once the weights appear in the cache, the same pool finds them.
	snap := filepath.Join(cache, "models--test-org--Not-Downloaded", "snapshots", "r1")
	os.MkdirAll(snap, 0o755)
	writeModelDir(t, snap, models.TinyQwen3, safetensors.BF16, 1)
	if m, err := p.Model("test-org/Not-Downloaded"); err != nil || m.Config().Family != models.Qwen3 {
		t.Errorf("after download: %v", err)
	}

	// Adapters: cached per directory, applied on the shared base weights.
	adir := t.TempDir()
	plan, err := peft.NewPlan(peft.Config{BaseModel: models.TinyQwen3, Rank: 2, TrainAttn: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.WriteDir(adir); err != nil {
		t.Fatal(err)
	}
	s1, err := p.Sampler(models.TinyQwen3, adir)
	if err != nil || s1.LoRA() == nil {
		t.Fatalf("Sampler with adapter: %v", err)
	}
	base, _ := p.Sampler(models.TinyQwen3, "")
	if s2, _ := p.Sampler(models.TinyQwen3, adir); s2 != s1 || base.LoRA() != nil || base.w != s1.w {
		t.Error("adapter not cached, or base weights not shared")
	}
	if _, err := p.Sampler(models.TinyQwen3, filepath.Join(adir, "missing")); err == nil {
		t.Error("missing adapter dir accepted")
	}
}

func TestLoadDirTokenizer(t *testing.T) {
	dir := t.TempDir()
	writeModelDir(t, dir, models.TinyQwen3, safetensors.F32, 1)
	m, err := LoadDir(dir)
	if err != nil || m.Tokenizer() != nil {
		t.Fatalf("without tokenizer.json: %v, tokenizer %v", err, m.Tokenizer())
	}
	req := SampleRequest{Prompt: []int{'h', 'i'}, MaxTokens: 20, Temperature: 1, Seed: seedp(4), StopStrings: []string{"x"}}
	if _, err := m.Sample(context.Background(), req); err == nil || !strings.Contains(err.Error(), "Decode") {
		t.Errorf("stop strings without a tokenizer: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tokenizer.TinyJSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err = LoadDir(dir)
	if err != nil || m.Tokenizer() == nil {
		t.Fatalf("with tokenizer.json: %v", err)
	}
	if ids := m.Tokenizer().Encode("hi there", true); !slices.Equal(ids, []int{'h', 'i', ' ', 't', 'h', 'e', 'r', 'e'}) {
		t.Errorf("Encode = %v", ids)
	}
	// Stop strings now work through the directory's tokenizer, exactly as
	// through the built-in one.
	builtin := mustLoad(t, models.TinyQwen3)
	full := sample(t, builtin, SampleRequest{Prompt: req.Prompt, MaxTokens: 20, Temperature: 1, Seed: seedp(4)}).Sequences[0]
	req.StopStrings = []string{builtin.Tokenizer().Decode(full.Tokens[5:7], true)}
	a, b := sample(t, m, req).Sequences[0], sample(t, builtin, req).Sequences[0]
	if !slices.Equal(a.Tokens, b.Tokens) || a.StopReason != StopReasonStop || len(a.Tokens) > 7 {
		t.Errorf("stop string via tokenizer.json: %v (%s), built-in %v", a.Tokens, a.StopReason, b.Tokens)
	}
}
