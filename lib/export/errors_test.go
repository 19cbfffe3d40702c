package export

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// TestServiceNames: the service's archives name the unembedding
// model.unembed_tokens; the merge treats it as lm_head.
func TestServiceNames(t *testing.T) {
	model := models.TinyLlama
	base := writeBase(t, baseSpec{model: model, tied: true, shards: 2, dtype: safetensors.F32})
	svc := writeAdapter(t, adapterSpec{model: model, rank: 3, alpha: 32, unembed: "model.unembed_tokens", modules: allModules[:2], dtype: safetensors.BF16, seed: 3})
	hf := writeAdapter(t, adapterSpec{model: model, rank: 3, alpha: 32, unembed: "lm_head", modules: allModules[:2], dtype: safetensors.BF16, seed: 3})
	out := filepath.Join(t.TempDir(), "m")
	if _, err := Export(context.Background(), Options{Adapter: svc, Base: base, Out: out}); err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(referenceLogprobs(t, base, hf), servedLogprobs(t, out)); d > 1e-3 {
		t.Errorf("merged from service names differs by %g", d)
	}
}

// TestBadInput: each refusal is one line naming what to do, and leaves no
// output directory or temporary sibling behind.
func TestBadInput(t *testing.T) {
	llama := writeBase(t, baseSpec{model: models.TinyLlama, tied: true, shards: 1, dtype: safetensors.F32})
	ad := writeAdapter(t, adapterSpec{model: models.TinyQwen3, rank: 2, alpha: 4, modules: allModules[:1], dtype: safetensors.F32, seed: 4})
	unknown := writeAdapter(t, adapterSpec{model: models.TinyQwen3, rank: 2, alpha: 4, modules: allModules[:1], dtype: safetensors.F32, seed: 4})
	addKey(t, unknown, "base_model.model.model.norm.weight")
	moe := writeAdapter(t, adapterSpec{model: models.TinyQwen3, rank: 2, alpha: 4, modules: allModules[:1], dtype: safetensors.F32, seed: 4})
	addKey(t, moe, "base_model.model.model.layers.0.mlp.shared_experts.gate_proj.lora_A.weight")
	notDense := writeAdapter(t, adapterSpec{model: models.TinyQwen3, rank: 2, alpha: 4, modules: allModules[:1], dtype: safetensors.F32, seed: 4})
	setBase(t, notDense, "deepseek-ai/DeepSeek-V3.1")
	parent := t.TempDir()
	exists := filepath.Join(parent, "exists")
	os.Mkdir(exists, 0o755)
	cases := []struct {
		name string
		o    Options
		want string
	}{
		{"mismatch", Options{Adapter: ad, Base: llama}, "checkpoint base model tinker-local/tiny-qwen3 (qwen3, "},
		{"unknown key", Options{Adapter: unknown, Base: llama}, "unknown key base_model.model.model.norm.weight"},
		{"moe", Options{Adapter: moe, Base: llama}, "mixture-of-experts module of a kind that cannot be exported"},
		{"deepseek without base", Options{Adapter: notDense}, "base model deepseek-ai/DeepSeek-V3.1 is not in the Hugging Face cache"},
		{"exists", Options{Adapter: ad, Base: llama, Out: exists}, "already exists: pass --force"},
		{"no base", Options{Adapter: ad, BaseModel: "meta-llama/Llama-3.2-1B"}, "not in the Hugging Face cache"},
		{"dtype", Options{Adapter: ad, DType: "int8"}, "unknown dtype"},
		{"not adapter", Options{Adapter: llama}, "is not an adapter directory"},
	}
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	for _, c := range cases {
		if c.o.Out == "" {
			c.o.Out = filepath.Join(parent, c.name)
		}
		_, err := Export(context.Background(), c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line with %q", c.name, err, c.want)
		}
	}
	left, _ := os.ReadDir(parent)
	if len(left) != 1 || left[0].Name() != "exists" {
		t.Errorf("left behind: %v", left)
	}
}

// addKey adds a tensor to an adapter's weights file.
func addKey(t *testing.T, dir, name string) {
	t.Helper()
	path := filepath.Join(dir, peft.WeightsFile)
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := append(f.Tensors, safetensors.Tensor{Name: name, DType: safetensors.F32, Shape: []int64{2, 64}, Data: make([]byte, 512)})
	w, _ := os.Create(path)
	defer w.Close()
	if err := safetensors.Write(w, ts, nil); err != nil {
		t.Fatal(err)
	}
}

func setBase(t *testing.T, dir, base string) {
	t.Helper()
	path := filepath.Join(dir, peft.ConfigFile)
	b, _ := os.ReadFile(path)
	var m map[string]any
	json.Unmarshal(b, &m)
	m["base_model_name_or_path"] = base
	b, _ = json.Marshal(m)
	writeFile(t, dir, peft.ConfigFile, b)
}

// TestForceKeepsOldUntilDone: --force replaces OUT only once the new one
// is complete; a failing export leaves the old OUT untouched.
func TestForceKeepsOldUntilDone(t *testing.T) {
	model := models.TinyQwen3
	base := writeBase(t, baseSpec{model: model, tied: true, shards: 2, dtype: safetensors.F32})
	ad := writeAdapter(t, adapterSpec{model: model, rank: 2, alpha: 4, modules: allModules, dtype: safetensors.F32, seed: 5})
	out := filepath.Join(t.TempDir(), "out")
	os.Mkdir(out, 0o755)
	writeFile(t, out, "old", []byte("old"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // interrupted (Ctrl-C) before the first merged block
	if _, err := Export(ctx, Options{Adapter: ad, Base: base, Out: out, Force: true}); err == nil {
		t.Fatal("a cancelled export succeeded")
	}
	if _, err := os.Stat(filepath.Join(out, "old")); err != nil {
		t.Fatalf("the old OUT is gone after a failed export: %v", err)
	}
	if left, _ := os.ReadDir(filepath.Dir(out)); len(left) != 1 {
		t.Errorf("left behind: %v", left)
	}
	if _, err := Export(context.Background(), Options{Adapter: ad, Base: base, Out: out, Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "old")); err == nil {
		t.Error("the old OUT's files survived --force")
	}
	if left, _ := os.ReadDir(filepath.Dir(out)); len(left) != 1 {
		t.Errorf("left behind: %v", left)
	}
}

// TestDTypeOption: --dtype bfloat16 writes every float tensor in bf16 and
// says so in config.json.
func TestDTypeOption(t *testing.T) {
	model := models.TinyLlama
	base := writeBase(t, baseSpec{model: model, tied: false, shards: 1, dtype: safetensors.F32})
	ad := writeAdapter(t, adapterSpec{model: model, rank: 2, alpha: 4, modules: allModules[:3], dtype: safetensors.F32, seed: 6})
	out := filepath.Join(t.TempDir(), "m")
	if _, err := Export(context.Background(), Options{Adapter: ad, Base: base, Out: out, DType: "bfloat16"}); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.ReadFile(filepath.Join(out, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range f.Tensors {
		if x.DType != safetensors.BF16 {
			t.Errorf("%s is %s", x.Name, x.DType)
		}
	}
	cfg, _ := os.ReadFile(filepath.Join(out, "config.json"))
	if !strings.Contains(string(cfg), `"torch_dtype": "bfloat16"`) {
		t.Errorf("config.json: %s", cfg)
	}
	if d := maxDiff(referenceLogprobs(t, base, ad), servedLogprobs(t, out)); d > 0.1 {
		t.Errorf("bf16 merged model differs by %g", d)
	}
}

// TestBaseFromHFCache: without --base, the base model's snapshot in the
// Hugging Face cache (HF_HOME) is used; a catalog model whose cached
// config has another shape is refused naming both.
func TestBaseFromHFCache(t *testing.T) {
	hf := t.TempDir()
	t.Setenv("HF_HOME", hf)
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HOME", t.TempDir())
	base := writeBase(t, baseSpec{model: models.TinyLlama, tied: true, shards: 2, dtype: safetensors.F32})
	for _, name := range []string{"me/tiny", "meta-llama/Llama-3.2-1B"} {
		repo := filepath.Join(hf, "hub", "models--"+strings.ReplaceAll(name, "/", "--"))
		os.MkdirAll(filepath.Join(repo, "refs"), 0o755)
		os.WriteFile(filepath.Join(repo, "refs", "main"), []byte("abc\n"), 0o644)
		os.MkdirAll(filepath.Join(repo, "snapshots"), 0o755)
		if err := os.Symlink(base, filepath.Join(repo, "snapshots", "abc")); err != nil {
			t.Fatal(err)
		}
	}
	ad := writeAdapter(t, adapterSpec{model: models.TinyLlama, rank: 2, alpha: 4, modules: allModules[:2], dtype: safetensors.F32, seed: 10})
	setBase(t, ad, "me/tiny")
	res, err := Export(context.Background(), Options{Adapter: ad, Out: filepath.Join(t.TempDir(), "m")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.BaseDir, "models--me--tiny") {
		t.Errorf("base dir %s, want the cache's snapshot", res.BaseDir)
	}
	setBase(t, ad, "meta-llama/Llama-3.2-1B")
	_, err = Export(context.Background(), Options{Adapter: ad, Out: filepath.Join(t.TempDir(), "m")})
	if err == nil || !strings.Contains(err.Error(), "checkpoint base model meta-llama/Llama-3.2-1B (llama, 16 layers") || !strings.Contains(err.Error(), "does not match the base directory") {
		t.Errorf("mismatched cached base: %v", err)
	}
}

// TestKilledReplaceIsFinished: an export killed between the renames that
// replace OUT left it missing, the old copy aside. The next export puts a
// copy back at OUT before anything else, never leaving OUT lost.
func TestKilledReplaceIsFinished(t *testing.T) {
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	for _, c := range []struct{ old, new, want string }{
		{".out.old-123", ".out.tmp-123", "old"},                   // earlier versions' layout
		{".out.old-00112233aabb", ".out.new-00112233aabb", "new"}, // atomicfile.SwapDir's
	} {
		for name, s := range map[string]string{c.old: "old", c.new: "new"} {
			os.Mkdir(filepath.Join(parent, name), 0o755)
			writeFile(t, filepath.Join(parent, name), "f", []byte(s))
		}
		_, err := Export(context.Background(), Options{Adapter: t.TempDir(), Out: out})
		if err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Errorf("%s: err = %v, want OUT found to exist", c.new, err)
		}
		if b, _ := os.ReadFile(filepath.Join(out, "f")); string(b) != c.want {
			t.Errorf("%s: OUT holds %q, want the %s copy", c.new, b, c.want)
		}
		os.RemoveAll(out)
		os.RemoveAll(filepath.Join(parent, c.new)) // the sweep's, once a minute old
	}
}
