package export

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// baseSpec shapes a test base model directory made from a tiny model.
type baseSpec struct {
	model  string
	tied   bool
	shards int               // 1 writes model.safetensors without an index
	dtype  safetensors.DType // of every tensor
}

// writeBase writes a real Hugging Face model directory: config.json,
// tokenizer, generation config and safetensors shards with an index.
// Untied, lm_head is a copy of the embedding, so the model computes the
// same function either way.
func writeBase(t testing.TB, s baseSpec) string {
	t.Helper()
	dir := t.TempDir()
	c, ts, err := engine.TinyTensors(s.model)
	if err != nil {
		t.Fatal(err)
	}
	c.TieWordEmbeddings = s.tied
	if !s.tied {
		e := ts[embedName]
		ts[lmHeadName] = engine.Tensor{Shape: e.Shape, Data: slices.Clone(e.Data)}
	}
	cfg, err := c.HFConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "config.json", cfg)
	writeFile(t, dir, "tokenizer.json", tokenizer.TinyJSON())
	writeFile(t, dir, "generation_config.json", []byte(`{"do_sample": true, "temperature": 0.6}`+"\n"))
	writeFile(t, dir, "README.md", []byte("base card\n"))
	writeShards(t, dir, ts, s.shards, s.dtype)
	return dir
}

func writeFile(t testing.TB, dir, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeShards spreads the tensors over n shard files by name order.
func writeShards(t testing.TB, dir string, ts engine.Tensors, n int, dt safetensors.DType) {
	t.Helper()
	names := slices.Sorted(maps.Keys(ts))
	parts := make([][]safetensors.Tensor, n)
	for k := range n {
		for _, name := range names[len(names)*k/n : len(names)*(k+1)/n] {
			parts[k] = append(parts[k], encodeTensor(t, name, ts[name], dt))
		}
	}
	if err := safetensors.WriteDir(dir, parts); err != nil {
		t.Fatal(err)
	}
}

func encodeTensor(t testing.TB, name string, x engine.Tensor, dt safetensors.DType) safetensors.Tensor {
	out, err := safetensors.FromFloat32(name, dt, x.Shape, x.Data)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// adapterSpec shapes a test adapter.
type adapterSpec struct {
	model       string
	rank, alpha int
	unembed     string // "" none, else the module path: "lm_head" or the service's "model.unembed_tokens"
	modules     []string
	dtype       safetensors.DType
	seed        uint64
}

// writeAdapter writes an adapter with random A and B (B is not zero, so
// every module changes the model) under PEFT names.
func writeAdapter(t testing.TB, s adapterSpec) string {
	t.Helper()
	dir := t.TempDir()
	c, err := engine.TinyConfig(s.model)
	if err != nil {
		t.Fatal(err)
	}
	shapes := engine.ExpectedShapes(c)
	r := rand.New(rand.NewPCG(s.seed, 7))
	ts := engine.Tensors{}
	add := func(path string, out, in int) {
		a := make([]float32, s.rank*in)
		b := make([]float32, out*s.rank)
		for i := range a {
			a[i] = float32(r.NormFloat64()) * 0.3
		}
		for i := range b {
			b[i] = float32(r.NormFloat64()) * 0.05
		}
		ts["base_model.model."+path+".lora_A.weight"] = engine.Tensor{Shape: []int{s.rank, in}, Data: a}
		ts["base_model.model."+path+".lora_B.weight"] = engine.Tensor{Shape: []int{out, s.rank}, Data: b}
	}
	var targets []string
	for i := range c.Layers {
		for _, m := range s.modules {
			sh := shapes[fmt.Sprintf("model.layers.%d.%s.weight", i, m)]
			add(fmt.Sprintf("model.layers.%d.%s", i, m), sh[0], sh[1])
			if i == 0 {
				targets = append(targets, m[strings.LastIndexByte(m, '.')+1:])
			}
		}
	}
	if s.unembed != "" {
		add(s.unembed, c.VocabSize, c.Hidden)
		targets = append(targets, "lm_head")
	}
	ac := peft.AdapterConfig{R: s.rank, LoraAlpha: float64(s.alpha), TargetModules: targets, PeftType: "LORA", BaseModelNameOrPath: s.model}
	b, _ := json.MarshalIndent(ac, "", "  ")
	writeFile(t, dir, peft.ConfigFile, b)
	var out []safetensors.Tensor
	for name, x := range ts {
		out = append(out, encodeTensor(t, name, x, s.dtype))
	}
	f, err := os.Create(filepath.Join(dir, peft.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := safetensors.Write(f, out, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return dir
}

var allModules = []string{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
	"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}
