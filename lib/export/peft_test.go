package export

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// TestPEFTFormat: a service-named adapter comes out under Hugging Face
// names with a complete adapter_config.json and the lm_head warning, and
// computes the same function.
func TestPEFTFormat(t *testing.T) {
	model := models.TinyQwen3
	base := writeBase(t, baseSpec{model: model, tied: true, shards: 1, dtype: safetensors.F32})
	svc := writeAdapter(t, adapterSpec{model: model, rank: 4, alpha: 16, unembed: "model.unembed_tokens", modules: allModules, dtype: safetensors.BF16, seed: 8})
	hf := writeAdapter(t, adapterSpec{model: model, rank: 4, alpha: 16, unembed: "lm_head", modules: allModules, dtype: safetensors.BF16, seed: 8})
	out := filepath.Join(t.TempDir(), "adapter")
	res, err := Export(context.Background(), Options{Adapter: svc, Format: PEFT, Out: out, Checkpoint: "tinker://run/sampler_weights/x"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "--format merged") {
		t.Errorf("warnings: %q", res.Warnings)
	}
	var ac peft.AdapterConfig
	b, _ := os.ReadFile(filepath.Join(out, peft.ConfigFile))
	if err := json.Unmarshal(b, &ac); err != nil {
		t.Fatal(err)
	}
	wantTargets := []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"}
	if ac.R != 4 || ac.LoraAlpha != 16 || ac.BaseModelNameOrPath != model || !slices.Equal(ac.TargetModules, wantTargets) || ac.PeftType != "LORA" {
		t.Errorf("adapter_config.json: %s", b)
	}
	f, err := safetensors.ReadFile(filepath.Join(out, peft.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Tensor("base_model.model.lm_head.lora_B.weight"); !ok {
		t.Errorf("no lm_head tensors in %v", f.Names())
	}
	for _, n := range f.Names() {
		if strings.Contains(n, "unembed") {
			t.Errorf("service name %s kept", n)
		}
	}
	if d := maxDiff(referenceLogprobs(t, base, hf), referenceLogprobs(t, base, out)); d != 0 {
		t.Errorf("the exported adapter computes something else (max diff %g)", d)
	}
}
