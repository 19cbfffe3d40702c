package export

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// promptLogprobs is the model's log p of each prompt token after the first.
func promptLogprobs(t *testing.T, m *engine.Model, prompt []int) []float64 {
	t.Helper()
	resp, err := m.Sample(context.Background(), engine.SampleRequest{Prompt: prompt, MaxTokens: 1, Temperature: 1, PromptLogprobs: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, p := range resp.PromptLogprobs[1:] {
		out = append(out, float64(*p))
	}
	return out
}

var testPrompt = []int{1, 72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100, 33, 10, 84, 105, 110, 107}

// referenceLogprobs: the base model with the adapter applied on the fly
// by the engine (never merged), the independent reference.
func referenceLogprobs(t *testing.T, baseDir, adapterDir string) []float64 {
	t.Helper()
	base, err := engine.LoadDir(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := base.WithAdapter(adapterDir)
	if err != nil {
		t.Fatal(err)
	}
	return promptLogprobs(t, m, testPrompt)
}

func servedLogprobs(t *testing.T, dir string) []float64 {
	t.Helper()
	m, err := engine.LoadDir(dir) // what tinker serve --model NAME=DIR loads
	if err != nil {
		t.Fatal(err)
	}
	return promptLogprobs(t, m, testPrompt)
}

func maxDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// TestMergedMatchesAdapter: for both families, tied and untied, the merged
// model's prompt logprobs equal the base + adapter's within 1e-3, and the
// adapter really changes them.
func TestMergedMatchesAdapter(t *testing.T) {
	for _, model := range []string{models.TinyLlama, models.TinyQwen3} {
		for _, tied := range []bool{true, false} {
			name := model + map[bool]string{true: "/tied", false: "/untied"}[tied]
			t.Run(name, func(t *testing.T) {
				base := writeBase(t, baseSpec{model: model, tied: tied, shards: 3, dtype: safetensors.F32})
				ad := writeAdapter(t, adapterSpec{model: model, rank: 4, alpha: 8, unembed: "lm_head", modules: allModules, dtype: safetensors.F32, seed: 1})
				out := filepath.Join(t.TempDir(), "merged")
				res, err := Export(context.Background(), Options{Adapter: ad, Base: base, Out: out})
				if err != nil {
					t.Fatal(err)
				}
				if res.Untied != tied {
					t.Errorf("Untied = %v for a tied=%v base", res.Untied, tied)
				}
				want, got := referenceLogprobs(t, base, ad), servedLogprobs(t, out)
				t.Logf("merged vs adapter %g, base vs adapter %g", maxDiff(want, got), maxDiff(want, servedLogprobs(t, base)))
				if d := maxDiff(want, got); d > 1e-3 {
					t.Errorf("merged logprobs differ from base+adapter by %g", d)
				}
				if d := maxDiff(want, servedLogprobs(t, base)); d < 1e-2 {
					t.Errorf("the adapter changes logprobs by only %g: the test proves nothing", d)
				}
				checkLayout(t, base, out, tied)
			})
		}
	}
}

// checkLayout: the base's shard names, an index naming every tensor, the
// side files copied, config untied when the base was tied, a model card.
func checkLayout(t *testing.T, base, out string, tied bool) {
	t.Helper()
	for _, f := range []string{"model-00001-of-00003.safetensors", "model-00003-of-00003.safetensors", "tokenizer.json", "generation_config.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	b, _ := os.ReadFile(filepath.Join(out, indexFile))
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	if idx.WeightMap[lmHeadName] == "" || idx.WeightMap[lmHeadName] != idx.WeightMap[embedName] && tied {
		t.Errorf("index puts lm_head in %q, embedding in %q", idx.WeightMap[lmHeadName], idx.WeightMap[embedName])
	}
	c, err := engine.ReadConfig(out)
	if err != nil || c.TieWordEmbeddings {
		t.Errorf("merged config: tied=%v err=%v", c.TieWordEmbeddings, err)
	}
	card, _ := os.ReadFile(filepath.Join(out, "README.md"))
	if !strings.Contains(string(card), "r=4, lora_alpha=8") || strings.Contains(string(card), "base card") {
		t.Errorf("model card:\n%s", card)
	}
}

// TestMergeRoundsOnce checks merged bf16 values against a float64
// computation of W + (alpha/r)·B·A rounded to bfloat16: equal, or one
// bfloat16 step apart where float32 summation lands on a rounding tie.
func TestMergeRoundsOnce(t *testing.T) {
	model := models.TinyQwen3
	base := writeBase(t, baseSpec{model: model, tied: true, shards: 1, dtype: safetensors.BF16})
	ad := writeAdapter(t, adapterSpec{model: model, rank: 5, alpha: 32, modules: []string{"mlp.down_proj"}, dtype: safetensors.BF16, seed: 2})
	out := filepath.Join(t.TempDir(), "m")
	if _, err := Export(context.Background(), Options{Adapter: ad, Base: base, Out: out}); err != nil {
		t.Fatal(err)
	}
	name := "model.layers.1.mlp.down_proj"
	w := tensor(t, filepath.Join(base, "model.safetensors"), name+".weight")
	got := tensor(t, filepath.Join(out, "model.safetensors"), name+".weight")
	a := tensor(t, filepath.Join(ad, "adapter_model.safetensors"), "base_model.model."+name+".lora_A.weight")
	b := tensor(t, filepath.Join(ad, "adapter_model.safetensors"), "base_model.model."+name+".lora_B.weight")
	if got.DType != safetensors.BF16 {
		t.Fatalf("merged dtype %s, want the base's BF16", got.DType)
	}
	wv, _ := w.Float32()
	gv, _ := got.Float32()
	av, _ := a.Float32()
	bv, _ := b.Float32()
	rows, cols, r := int(w.Shape[0]), int(w.Shape[1]), 5
	off, changed := 0, 0
	for i := range rows {
		for j := range cols {
			s := 0.0
			for k := range r {
				s += float64(bv[i*r+k]) * float64(av[k*cols+j])
			}
			want := safetensors.BF16ToFloat32(safetensors.Float32ToBF16(float32(float64(wv[i*cols+j]) + 32.0/5*s)))
			if g := gv[i*cols+j]; g != want {
				off++
				if math.Abs(float64(g-want)) > math.Abs(float64(want))/128 {
					t.Fatalf("[%d,%d] = %g, want %g", i, j, g, want)
				}
			}
			if gv[i*cols+j] != wv[i*cols+j] {
				changed++
			}
		}
	}
	if off > rows*cols/100 || changed < rows*cols/2 {
		t.Errorf("%d of %d values off by a rounding step, %d changed", off, rows*cols, changed)
	}
}

func tensor(t *testing.T, path, name string) *safetensors.Tensor {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	x, ok := f.Tensor(name)
	if !ok {
		t.Fatalf("%s has no %s", path, name)
	}
	return x
}
