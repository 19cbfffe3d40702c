package server

import (
	"context"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/export"
	"github.com/tinkershell/tinker/lib/models"
)

// A Qwen3-MoE adapter exported as PEFT (one module per expert) imports
// back into a run whose weights checkpoint (stacked w1/w2/w3 experts)
// computes the original adapter's logprobs.
func TestImportAdapterMoE(t *testing.T) {
	for _, name := range []string{models.TinyQwen3MoE, models.TinyGptOss, models.TinyDeepSeek} {
		t.Run(name, func(t *testing.T) { checkImportMoE(t, name) })
	}
}

// checkImportMoE imports an adapter of tiny model name: its PEFT export for
// Qwen3-MoE and DeepSeek-V3, the local server's own directory for GPT-OSS
// (whose fused experts have no PEFT form).
func checkImportMoE(t *testing.T, name string) {
	base, err := engine.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	orig := trainedMoE(t, name)
	peftDir := orig
	if name != models.TinyGptOss {
		peftDir = filepath.Join(t.TempDir(), "peft")
		if _, err := export.Export(context.Background(), export.Options{Adapter: orig, Format: export.PEFT, Out: peftDir}); err != nil {
			t.Fatal(err)
		}
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
	want, plain := modelAdapterLogprobs(t, name, orig, prompt), modelAdapterLogprobs(t, name, peftDir, prompt)
	if d := maxAbsDiff(want, plain); d != 0 {
		t.Errorf("the PEFT export differs from the adapter by %g", d)
	}
	got := modelAdapterLogprobs(t, name, checkpointPath(data, res.RunID, "weights", "imported"), prompt)
	if d := maxAbsDiff(want, got); d > 1e-4 {
		t.Errorf("imported weights differ from the adapter by %g", d)
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
