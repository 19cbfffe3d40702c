package export

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// --experts chooses the PEFT layout of the experts against what
// transformers holds: GPT-OSS per expert (vLLM's mixed-format layout) and
// Qwen3-MoE fused on a 4.x base or per expert on a 5.x one; each export
// says in one line which server loads it, and reads back into the very
// merged weights the original adapter gives.
func TestPEFTExpertsLayout(t *testing.T) {
	for _, tc := range []struct {
		name, experts string
		adapter, base func(*testing.T) string
		fused         bool
		warning       string
	}{
		{"gpt-oss per-expert", ExpertsPerExpert, gptOssAdapter, gptOssBase, false, GptOssPerExpertWarning},
		{"qwen3-moe 5.x per-expert", ExpertsPerExpert, moeAdapter, func(t *testing.T) string { return moeBase(t, true) }, false, MoEServeWarning},
		{"qwen3-moe 4.x fused", ExpertsFused, moeAdapter, func(t *testing.T) string { return moeBase(t, false) }, true, MoEFusedWarning},
		{"qwen3-moe 4.x default", "", moeAdapter, func(t *testing.T) string { return moeBase(t, false) }, false, MoEServeWarning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ad, base := tc.adapter(t), tc.base(t)
			o := Options{Adapter: ad, Format: PEFT, Base: base, Experts: tc.experts, Out: filepath.Join(t.TempDir(), "peft")}
			res, err := Export(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(res.Warnings, tc.warning) {
				t.Errorf("warnings %q, want %q", res.Warnings, tc.warning)
			}
			if fused := hasTargetParameters(t, o.Out); fused != tc.fused {
				t.Errorf("target_parameters written %v, want %v", fused, tc.fused)
			}
			names := readTensorsFile(t, filepath.Join(o.Out, peft.WeightsFile))
			if _, perExpert := names["base_model.model.model.layers.0.mlp.experts.1.gate_proj.lora_A.weight"]; perExpert == tc.fused {
				t.Errorf("per-expert modules written %v, want %v", perExpert, !tc.fused)
			}
			sameFiles(t, exportTo(t, Options{Adapter: o.Out, Base: base}), exportTo(t, Options{Adapter: ad, Base: base}),
				"merging the "+tc.name+" export vs merging the original")
		})
	}
}

func hasTargetParameters(t *testing.T, dir string) bool {
	t.Helper()
	var cfg peft.AdapterConfig
	b, err := os.ReadFile(filepath.Join(dir, peft.ConfigFile))
	if err != nil || json.Unmarshal(b, &cfg) != nil {
		t.Fatalf("read %s: %v", peft.ConfigFile, err)
	}
	return len(cfg.TargetParameters) > 0
}

// --experts is refused in one line where it cannot apply.
func TestExpertsOptionRefused(t *testing.T) {
	moe, ds := moeAdapter(t), deepseekTrained(t)
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Adapter: moe, Experts: ExpertsPerExpert}, "add --format peft"},
		{Options{Adapter: moe, Format: PEFT, Experts: "stacked"}, `unknown --experts "stacked"`},
		{Options{Adapter: ds, Format: PEFT, Experts: ExpertsFused}, "per expert only"},
	} {
		tc.o.Out = filepath.Join(t.TempDir(), "out")
		_, err := Export(context.Background(), tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want one line with %q", tc.o, err, tc.want)
		}
		if _, serr := os.Stat(tc.o.Out); serr == nil {
			t.Errorf("%s written despite the refusal", tc.o.Out)
		}
	}
}

// vLLM takes LoRA on lm_head for Llama only (llama.py lists it among its
// LoRA modules; the other families' classes do not, and vLLM refuses the
// adapter): the PEFT export warns for the others.
func TestUnembedWarningByFamily(t *testing.T) {
	for _, tc := range []struct {
		model string
		warn  bool
	}{{"tinker-local/tiny-llama", false}, {"tinker-local/tiny-qwen3", true}} {
		ad := writeAdapter(t, adapterSpec{model: tc.model, rank: 2, alpha: 4, unembed: "lm_head", modules: allModules, dtype: safetensors.F32})
		res, err := Export(context.Background(), Options{Adapter: ad, Format: PEFT, Out: filepath.Join(t.TempDir(), "peft")})
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(res.Warnings, UnembedWarning); got != tc.warn {
			t.Errorf("%s: lm_head warning %v, want %v (warnings %q)", tc.model, got, tc.warn, res.Warnings)
		}
	}
}
