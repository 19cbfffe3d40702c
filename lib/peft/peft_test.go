package peft

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
)

func TestWriteReadTiny(t *testing.T) {
	cfg := Config{BaseModel: models.TinyQwen3, Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, DType: safetensors.F32, Seed: 7}
	p, err := NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ckpt")
	if err := p.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, n := range []string{ConfigFile, WeightsFile, CompleteFile} {
		st, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
	}
	if total != p.Size() {
		t.Fatalf("files total %d bytes, plan says %d", total, p.Size())
	}
	var raw map[string]any
	cb, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	json.Unmarshal(cb, &raw)
	if raw["peft_type"] != "LORA" || raw["task_type"] != "CAUSAL_LM" || raw["r"] != 4.0 || raw["lora_alpha"] != 32.0 || raw["base_model_name_or_path"] != models.TinyQwen3 {
		t.Errorf("adapter config = %v", raw)
	}
	tm := raw["target_modules"].([]any)
	if len(tm) != 8 || tm[0] != "q_proj" || tm[7] != "lm_head" {
		t.Errorf("target_modules = %v", tm)
	}

	a, err := ReadDir(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	arch, _ := models.Lookup(models.TinyQwen3)
	if want := arch.Layers*7 + 1; len(a.Modules) != want {
		t.Errorf("modules = %d, want %d", len(a.Modules), want)
	}
	q := a.Modules["model.layers.3.self_attn.k_proj"]
	if q.A == nil || q.A.Shape[0] != 4 || q.A.Shape[1] != int64(arch.Hidden) || q.B.Shape[0] != int64(arch.KVHeads*arch.HeadDim) {
		t.Fatalf("k_proj shapes A=%v B=%v", q.A.Shape, q.B.Shape)
	}
	av, _ := q.A.Float32()
	bv, _ := q.B.Float32()
	bound := 1 / math.Sqrt(float64(arch.Hidden))
	var nonzero int
	for _, v := range av {
		if math.Abs(float64(v)) > bound {
			t.Fatalf("A value %g outside Kaiming bound %g", v, bound)
		}
		if v != 0 {
			nonzero++
		}
	}
	if nonzero < len(av)/2 {
		t.Errorf("A mostly zero: %d of %d", nonzero, len(av))
	}
	for _, v := range bv {
		if v != 0 {
			t.Fatal("B must be zero-initialised")
		}
	}
	if _, ok := a.Modules["lm_head"]; !ok {
		t.Error("no lm_head module")
	}
	if a.Scale() != 8 {
		t.Errorf("scale = %g", a.Scale())
	}

	// Deterministic: same seed, same bytes; another seed, other bytes.
	dir2 := filepath.Join(t.TempDir(), "again")
	p.WriteDir(dir2)
	w1, _ := os.ReadFile(filepath.Join(dir, WeightsFile))
	w2, _ := os.ReadFile(filepath.Join(dir2, WeightsFile))
	if string(w1) != string(w2) {
		t.Error("same seed gave different weights")
	}
	cfg.Seed = 8
	p3, _ := NewPlan(cfg)
	dir3 := filepath.Join(t.TempDir(), "other")
	p3.WriteDir(dir3)
	w3, _ := os.ReadFile(filepath.Join(dir3, WeightsFile))
	if string(w1) == string(w3) {
		t.Error("different seeds gave the same weights")
	}
}

func TestIncompleteRejected(t *testing.T) {
	p, _ := NewPlan(Config{BaseModel: models.TinyLlama, Rank: 2, TrainAttn: true})
	dir := filepath.Join(t.TempDir(), "c")
	if err := p.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, CompleteFile))
	if _, err := ReadDir(dir, false); err == nil {
		t.Fatal("missing marker should fail")
	}
	a, err := ReadDir(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
}

func TestSizeMatchesObservedService(t *testing.T) {
	// Llama-3.1-8B rank 32, all targets, bf16: 88,121,344 parameters.
	p, err := NewPlan(Config{BaseModel: "meta-llama/Llama-3.1-8B", Rank: 32, TrainAttn: true, TrainMLP: true, TrainUnembed: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Layout.DataSize(); got != 88121344*2 {
		t.Errorf("data size = %d", got)
	}
	// MoE and MLA shapes are computed without error and are large.
	for _, m := range []string{"Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V3.1", "openai/gpt-oss-20b"} {
		s, err := Size(Config{BaseModel: m, Rank: 8, TrainAttn: true, TrainMLP: true})
		if err != nil || s < 1<<20 {
			t.Errorf("%s: size %d err %v", m, s, err)
		}
	}
	if _, err := Size(Config{BaseModel: "x/y", Rank: 8, TrainAttn: true}); err == nil {
		t.Error("unknown model should fail")
	}
	if _, err := Size(Config{BaseModel: models.TinyLlama, Rank: 8}); err == nil {
		t.Error("no targets should fail")
	}
}

func TestMoEExpertTensors(t *testing.T) {
	p, _ := NewPlan(Config{BaseModel: "Qwen/Qwen3-30B-A3B", Rank: 4, TrainMLP: true})
	var found bool
	for i, ti := range p.Layout.Tensors {
		if ti.Name == "base_model.model.model.layers.0.mlp.experts.w2.lora_A.weight" {
			found = true
			if len(ti.Shape) != 3 || ti.Shape[0] != 128 || ti.Shape[1] != 4 || ti.Shape[2] != 768 {
				t.Errorf("w2 A shape %v (index %d)", ti.Shape, i)
			}
		}
	}
	if !found {
		t.Error("no expert tensors")
	}
}

func BenchmarkWriteWeightsLlama1B(b *testing.B) {
	p, _ := NewPlan(Config{BaseModel: "meta-llama/Llama-3.2-1B", Rank: 32, TrainAttn: true, TrainMLP: true, TrainUnembed: true})
	b.SetBytes(p.Layout.Size())
	for b.Loop() {
		p.WriteWeights(discard{})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestIndependentReader parses a written adapter with a small Node.js
// script that uses no safetensors library, and compares keys and shapes.
func TestIndependentReader(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is required for this test (install nodejs; CI images have it)")
	}
	dir := filepath.Join(t.TempDir(), "a")
	p, _ := NewPlan(Config{BaseModel: models.TinyLlama, Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 3})
	if err := p.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(node, "testdata/check_adapter.js", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("node check failed: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	// 2 layers x 7 modules x 2 + lm_head x 2 tensors, then the config line.
	if len(lines) != 2*7*2+2+1 {
		t.Fatalf("got %d lines:\n%s", len(lines), out)
	}
	want := []string{
		"base_model.model.lm_head.lora_A.weight BF16 4x64",
		"base_model.model.lm_head.lora_B.weight BF16 260x4",
		"base_model.model.model.layers.0.mlp.down_proj.lora_A.weight BF16 4x192",
		"base_model.model.model.layers.1.self_attn.k_proj.lora_B.weight BF16 32x4",
		"r=4 alpha=32 peft_type=LORA task_type=CAUSAL_LM",
	}
	for _, w := range want {
		if !strings.Contains(string(out), w+"\n") {
			t.Errorf("missing %q in:\n%s", w, out)
		}
	}
}
