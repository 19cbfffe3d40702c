package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// TestCreateModelWithoutWeights (issue 22, item 3): a catalog model whose
// weights are absent is refused by create_model at once, with the message
// that says how to provide them; capabilities list the whole catalog with
// servable marking what can run now; once the weights are in the Hugging
// Face cache the same model is servable and its training client is made.
func TestCreateModelWithoutWeights(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HOME", t.TempDir())
	e := newTrainEnv(t, Options{})
	ctx := context.Background()
	const name = "Qwen/Qwen3-8B"
	if _, ok := models.Lookup(name); !ok {
		t.Fatalf("%s is not in the catalog", name)
	}
	_, err := e.sess.CreateTrainingClient(ctx, name, tinkerapi.LoraConfig{Rank: 4, TrainMLP: true}, nil)
	if err == nil || !strings.Contains(err.Error(), "hf download "+name) || !strings.Contains(err.Error(), "--model "+name+"=DIR") {
		t.Fatalf("create_model without weights: %v", err)
	}
	caps := func() map[string]tinkerapi.SupportedModel {
		code, b, _ := e.do("GET", "/api/v1/get_server_capabilities", nil)
		var c tinkerapi.ServerCapabilities
		if code != 200 || json.Unmarshal(b, &c) != nil {
			t.Fatalf("capabilities: %d %s", code, b)
		}
		out := map[string]tinkerapi.SupportedModel{}
		for _, m := range c.SupportedModels {
			out[m.ModelName] = m
		}
		if len(out) != len(models.All()) {
			t.Errorf("capabilities list %d models, the catalog %d", len(out), len(models.All()))
		}
		return out
	}
	c := caps()
	if m := c[models.TinyLlama]; m.Servable == nil || !*m.Servable {
		t.Errorf("%s: %+v, want servable", models.TinyLlama, m)
	}
	if m := c[name]; m.Servable == nil || *m.Servable || !strings.Contains(m.Unavailable, "hf download") {
		t.Errorf("%s: %+v, want not servable with how to get it", name, m)
	}
	// The weights arrive in the cache (a snapshot holding config.json and
	// model.safetensors is what the loader looks for).
	snap := filepath.Join(cache, "models--Qwen--Qwen3-8B", "snapshots", "abc")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "model.safetensors"} {
		if err := os.WriteFile(filepath.Join(snap, f), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if m := caps()[name]; m.Servable == nil || !*m.Servable {
		t.Errorf("%s with weights in the cache: %+v", name, m)
	}
	if _, err := e.sess.CreateTrainingClient(ctx, name, tinkerapi.LoraConfig{Rank: 4, TrainMLP: true}, nil); err != nil {
		t.Errorf("create_model with weights in the cache: %v", err)
	}
}
