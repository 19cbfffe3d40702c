package server

import (
	"context"
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/export"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// A Qwen3-MoE, GPT-OSS or DeepSeek-V3 adapter exported as PEFT in each
// layout the export writes (one module per expert, target_parameters, and
// Kimi K2.5/K2.6's language_model. names) imports back into a run whose
// weights checkpoint (stacked w1/w2/w3 experts) computes the original
// adapter's logprobs and merges to the original's weights.
func TestImportAdapterMoE(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		o           export.Options // the PEFT export's layout
	}{
		{"qwen3-moe per-expert", models.TinyQwen3MoE, export.Options{}},
		{"qwen3-moe fused", models.TinyQwen3MoE, export.Options{Experts: export.ExpertsFused}},
		{"gpt-oss fused", models.TinyGptOss, export.Options{}},
		{"gpt-oss per-expert", models.TinyGptOss, export.Options{Experts: export.ExpertsPerExpert}},
		{"deepseek", models.TinyDeepSeek, export.Options{}},
		{"kimi-k2.5 names", models.TinyDeepSeek, export.Options{BaseModel: "moonshotai/Kimi-K2.5"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkImportMoE(t, tc.model, tc.o) })
	}
}

// checkImportMoE imports the PEFT export (in o's layout) of an adapter of
// tiny model name.
func checkImportMoE(t *testing.T, name string, o export.Options) {
	base, err := engine.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	orig := trainedMoE(t, name)
	peftDir := filepath.Join(t.TempDir(), "peft")
	o.Adapter, o.Format, o.Out = orig, export.PEFT, peftDir
	if _, err := export.Export(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if o.BaseModel != "" && !peftNamesUnder(t, peftDir, "base_model.model.language_model.") {
		t.Fatalf("the %s export is not under language_model.", o.BaseModel)
	}
	data := t.TempDir()
	res, err := ImportAdapter(context.Background(), data, peftDir, name, "", t0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Targets, ",") != "attn,mlp" {
		t.Errorf("import = %+v", res)
	}
	prompt := []int{models.TinyBOS, 'm', 'o', 'e', ' ', 'x', 'y', 'z', '\n', 'h', 'i'}
	want := modelAdapterLogprobs(t, name, orig, prompt)
	if name == models.TinyQwen3MoE && o.Experts == "" { // the engine samples per-expert PEFT modules too
		if d := maxAbsDiff(want, modelAdapterLogprobs(t, name, peftDir, prompt)); d != 0 {
			t.Errorf("the PEFT export differs from the adapter by %g", d)
		}
	}
	got := modelAdapterLogprobs(t, name, checkpointPath(data, res.RunID, "weights", "imported"), prompt)
	if d := maxAbsDiff(want, got); d > 1e-4 {
		t.Errorf("imported weights differ from the adapter by %g", d)
	}
	// Alpha 16 to the server's 32 at rank 3 halves B: exact, so the
	// merged weights are the same bits.
	d := mergedDiff(t, orig, checkpointPath(data, res.RunID, "weights", "imported"))
	if d != 0 {
		t.Errorf("the imported checkpoint merges to weights %g away from the original's", d)
	}
	st, err := engine.NewTrainer(base, engine.LoRAConfig{Rank: 3, TrainAttn: true, TrainMLP: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.LoadStateDir(checkpointPath(data, res.RunID, "weights", "imported"), false); err != nil {
		t.Fatalf("the imported checkpoint does not load for training: %v", err)
	}
}

// trainedMoE writes an adapter of tiny model name (attention and MLP,
// rank 3, alpha 16) with random B, as the local server saves it.
func trainedMoE(t *testing.T, name string) string {
	t.Helper()
	base, err := engine.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := engine.NewTrainer(base, engine.LoRAConfig{Rank: 3, Alpha: 16, TrainAttn: true, TrainMLP: true, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	ts := tr.Adapter()
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range slices.Sorted(maps.Keys(ts)) { // sorted: the same draws every run
		if x := ts[n]; strings.HasSuffix(n, "lora_B.weight") {
			for i := range x.Data {
				x.Data[i] = float32(r.NormFloat64() * 0.05)
			}
		}
	}
	if err := tr.LoadAdapter(ts); err != nil {
		t.Fatal(err)
	}
	orig := filepath.Join(t.TempDir(), "orig")
	if err := tr.WriteStateDir(orig, name, false); err != nil {
		t.Fatal(err)
	}
	return orig
}

// mergedDiff merges adapters x and y into their (built-in tiny) base and
// returns the largest difference between the merged weights.
func mergedDiff(t *testing.T, x, y string) float64 {
	t.Helper()
	var files [2]map[string][]float32
	for i, ad := range []string{x, y} {
		out := filepath.Join(t.TempDir(), "merged")
		if _, err := export.Export(context.Background(), export.Options{Adapter: ad, Out: out, DType: "float32"}); err != nil {
			t.Fatal(err)
		}
		files[i] = readWeights(t, out)
	}
	var d float64
	for n, a := range files[0] {
		b, ok := files[1][n]
		if !ok || len(a) != len(b) {
			t.Fatalf("merged tensor %s is missing or of another size", n)
		}
		for j := range a {
			d = math.Max(d, math.Abs(float64(a[j])-float64(b[j])))
		}
	}
	return d
}

// readWeights reads every tensor of a model directory's shards as float32.
func readWeights(t *testing.T, dir string) map[string][]float32 {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	ws := map[string][]float32{}
	for _, p := range paths {
		f, err := safetensors.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i := range f.Tensors {
			if ws[f.Tensors[i].Name], err = f.Tensors[i].Float32(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(ws) == 0 {
		t.Fatalf("no weights in %s", dir)
	}
	return ws
}

// peftNamesUnder reports whether every tensor of a PEFT adapter is named
// under prefix.
func peftNamesUnder(t *testing.T, dir, prefix string) bool {
	t.Helper()
	f, err := safetensors.ReadFile(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range f.Tensors {
		if !strings.HasPrefix(x.Name, prefix) {
			return false
		}
	}
	return len(f.Tensors) > 0
}
