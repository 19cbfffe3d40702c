package export

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// moeAdapter writes a tiny-qwen3-moe adapter as the local server saves
// one (stacked w1/w2/w3 expert tensors, float32), on every matrix the
// service adapts, with random B.
func moeAdapter(t *testing.T) string {
	return trainedAdapter(t, models.TinyQwen3MoE, engine.LoRAConfig{Rank: 4, Alpha: 8, Seed: 3}, 5, 0.05)
}

// sharedOuter fails the test unless the adapter in dir has the service's
// expert shapes: hidden-side factor [1, ...], the other [experts, ...].
func sharedOuter(t *testing.T, dir string, experts int64) {
	t.Helper()
	f, err := safetensors.ReadFile(filepath.Join(dir, peft.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range f.Tensors {
		if !strings.Contains(x.Name, ".mlp.experts.w") {
			continue
		}
		n++
		want := experts
		if strings.Contains(x.Name, "w2.lora_B") || (strings.Contains(x.Name, "lora_A") && !strings.Contains(x.Name, "w2.")) {
			want = 1
		}
		if x.Shape[0] != want {
			t.Errorf("%s has shape %v, want %d leading", x.Name, x.Shape, want)
		}
	}
	if n == 0 {
		t.Fatal("the adapter has no expert tensors")
	}
}

// trainedAdapter writes an adapter of tiny model name on every matrix,
// saved by the engine's trainer, with B drawn from seed at scale amp.
func trainedAdapter(t *testing.T, name string, c engine.LoRAConfig, seed uint64, amp float64) string {
	t.Helper()
	m, err := engine.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	c.TrainAttn, c.TrainMLP, c.TrainUnembed = true, true, true
	tr, err := engine.NewTrainer(m, c)
	if err != nil {
		t.Fatal(err)
	}
	ts := tr.Adapter()
	r := rand.New(rand.NewPCG(seed, seed+1))
	for _, n := range slices.Sorted(maps.Keys(ts)) { // sorted: the same draws every run
		if x := ts[n]; strings.HasSuffix(n, "lora_B.weight") {
			for i := range x.Data {
				x.Data[i] = float32(r.NormFloat64() * amp)
			}
		}
	}
	if err := tr.LoadAdapter(ts); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "adapter")
	if err := tr.WriteStateDir(dir, name, false); err != nil {
		t.Fatal(err)
	}
	return dir
}

// moeBase writes tiny-qwen3-moe as a model directory, its experts one
// tensor each (transformers 4.x, as on the Hub) or fused (5.x).
func moeBase(t *testing.T, fused bool) string {
	t.Helper()
	c, ts, err := engine.TinyTensors(models.TinyQwen3MoE)
	if err != nil {
		t.Fatal(err)
	}
	if fused {
		ts = fuseTiny(c, ts)
	}
	dir := t.TempDir()
	cfg, _ := c.HFConfigJSON()
	writeFile(t, dir, "config.json", cfg)
	writeFile(t, dir, "tokenizer.json", tokenizer.TinyJSON())
	writeShards(t, dir, ts, 2, safetensors.F32)
	return dir
}

// fuseTiny stores each layer's experts as gate_up_proj [E, 2I, H] (gate
// rows, then up rows, per expert) and down_proj [E, H, I].
func fuseTiny(c engine.Config, ts engine.Tensors) engine.Tensors {
	for i := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.mlp.experts.", i)
		var gu, d []float32
		for e := range c.Experts {
			for _, proj := range []string{"gate_proj", "up_proj", "down_proj"} {
				name := fmt.Sprintf("%s%d.%s.weight", p, e, proj)
				if proj == "down_proj" {
					d = append(d, ts[name].Data...)
				} else {
					gu = append(gu, ts[name].Data...)
				}
				delete(ts, name)
			}
		}
		ts[p+"gate_up_proj"] = engine.Tensor{Shape: []int{c.Experts, 2 * c.MoEIntermediate, c.Hidden}, Data: gu}
		ts[p+"down_proj"] = engine.Tensor{Shape: []int{c.Experts, c.Hidden, c.MoEIntermediate}, Data: d}
	}
	return ts
}

// The merged model, run by the engine as a plain base, gives the engine's
// on-the-fly LoRA logprobs within float32 rounding, in both expert layouts,
// for an adapter the engine trained (the service's shared-outer form).
func TestMergedMoEMatchesAdapter(t *testing.T) {
	ad := moeAdapter(t)
	sharedOuter(t, ad, 8)
	for _, fused := range []bool{false, true} {
		t.Run(map[bool]string{false: "per-expert", true: "fused"}[fused], func(t *testing.T) {
			base := moeBase(t, fused)
			out := filepath.Join(t.TempDir(), "merged")
			res, err := Export(context.Background(), Options{Adapter: ad, Base: base, Out: out})
			if err != nil {
				t.Fatal(err)
			}
			if want := 4*4 + 4*3*8 + 1; res.Modules != want {
				t.Errorf("%d modules merged, want %d", res.Modules, want)
			}
			want, got := referenceLogprobs(t, base, ad), servedLogprobs(t, out)
			t.Logf("merged vs adapter %g, base vs adapter %g", maxDiff(want, got), maxDiff(want, servedLogprobs(t, base)))
			if d := maxDiff(want, got); d > 1e-4 {
				t.Errorf("merged logprobs differ from base+adapter by %g", d)
			}
			if d := maxDiff(want, servedLogprobs(t, base)); d < 1e-2 {
				t.Errorf("the adapter changes logprobs by only %g: the test proves nothing", d)
			}
			name := "model.layers.2.mlp.experts.5.up_proj.weight"
			if fused {
				name = "model.layers.2.mlp.experts.gate_up_proj"
			}
			if _, err := safetensors.ReadFile(filepath.Join(out, "model-00002-of-00002.safetensors")); err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, s := range []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"} {
				f, _ := safetensors.ReadFile(filepath.Join(out, s))
				_, ok := f.Tensor(name)
				found = found || ok
			}
			if !found {
				t.Errorf("merged model has no %s: the base's layout is not kept", name)
			}
		})
	}
}

// A PEFT export names the experts one module each (experts.N.gate_proj),
// computes what the stacked adapter does, merges into the same weights,
// and restacks (import-adapter) to the same values.
func TestPEFTMoE(t *testing.T) {
	ad := moeAdapter(t)
	base := moeBase(t, false)
	out := filepath.Join(t.TempDir(), "peft")
	if _, err := Export(context.Background(), Options{Adapter: ad, Format: PEFT, Out: out}); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.ReadFile(filepath.Join(out, peft.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Tensor("base_model.model.model.layers.3.mlp.experts.7.down_proj.lora_B.weight"); !ok {
		t.Errorf("no per-expert tensors in %v", f.Names()[:5])
	}
	if d := maxDiff(referenceLogprobs(t, base, ad), referenceLogprobs(t, base, out)); d != 0 {
		t.Errorf("the exported adapter computes something else (max diff %g)", d)
	}
	var merged [2]string
	for i, src := range []string{ad, out} {
		merged[i] = filepath.Join(t.TempDir(), "merged")
		if _, err := Export(context.Background(), Options{Adapter: src, Base: base, Out: merged[i]}); err != nil {
			t.Fatal(err)
		}
	}
	sameFiles(t, merged[0], merged[1], "merging the PEFT export vs merging the original")
	orig, err := ReadAdapter(ad)
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	exp, err := ReadAdapter(out)
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Close()
	stacked, err := StackExperts(exp.Modules)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := safetensors.ReadFile(filepath.Join(ad, peft.WeightsFile))
	var n int
	for _, m := range stacked {
		if !strings.Contains(m.Path, ".experts.w") {
			continue
		}
		n++
		for half, got := range map[string]*safetensors.Tensor{"lora_A": m.A, "lora_B": m.B} {
			want, _ := raw.Tensor("base_model.model." + m.Path + "." + half + ".weight")
			if !slices.Equal(want.Shape, got.Shape) || string(want.Data) != string(got.Data) {
				t.Errorf("%s %s: restacked %v differs from the original %v", m.Path, half, got.Shape, want.Shape)
			}
		}
	}
	if n != 4*3 {
		t.Errorf("%d stacked expert modules, want 12", n)
	}
}
