package export

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// gptOssBase writes tiny-gpt-oss as transformers stores an unquantised
// GPT-OSS: each layer's experts in gate_up_proj [E, H, 2I] (gate and up
// interleaved), down_proj [E, I, H] and their fused biases.
func gptOssBase(t *testing.T) string {
	t.Helper()
	c, ts, err := engine.TinyTensors(models.TinyGptOss)
	if err != nil {
		t.Fatal(err)
	}
	E, H, I := c.Experts, c.Hidden, c.MoEIntermediate
	for l := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.mlp.experts.", l)
		gu, gub := make([]float32, E*H*2*I), make([]float32, E*2*I)
		dn, dnb := make([]float32, E*I*H), make([]float32, E*H)
		for e := range E {
			name := func(proj, kind string) string { return fmt.Sprintf("%s%d.%s.%s", p, e, proj, kind) }
			g, u, d := ts[name("gate_proj", "weight")].Data, ts[name("up_proj", "weight")].Data, ts[name("down_proj", "weight")].Data
			for i := range I {
				for h := range H {
					gu[(e*H+h)*2*I+2*i] = g[i*H+h]
					gu[(e*H+h)*2*I+2*i+1] = u[i*H+h]
					dn[(e*I+i)*H+h] = d[h*I+i]
				}
				gub[e*2*I+2*i], gub[e*2*I+2*i+1] = ts[name("gate_proj", "bias")].Data[i], ts[name("up_proj", "bias")].Data[i]
			}
			copy(dnb[e*H:], ts[name("down_proj", "bias")].Data)
			for _, proj := range []string{"gate_proj", "up_proj", "down_proj"} {
				delete(ts, name(proj, "weight"))
				delete(ts, name(proj, "bias"))
			}
		}
		ts[p+"gate_up_proj"] = engine.Tensor{Shape: []int{E, H, 2 * I}, Data: gu}
		ts[p+"gate_up_proj_bias"] = engine.Tensor{Shape: []int{E, 2 * I}, Data: gub}
		ts[p+"down_proj"] = engine.Tensor{Shape: []int{E, I, H}, Data: dn}
		ts[p+"down_proj_bias"] = engine.Tensor{Shape: []int{E, H}, Data: dnb}
	}
	dir := t.TempDir()
	cfg, _ := c.HFConfigJSON()
	writeFile(t, dir, "config.json", cfg)
	writeFile(t, dir, "tokenizer.json", tokenizer.TinyJSON())
	writeShards(t, dir, ts, 2, safetensors.F32)
	return dir
}

// gptOssAdapter is a tiny-gpt-oss adapter on every matrix, random B.
func gptOssAdapter(t *testing.T) string {
	return trainedAdapter(t, models.TinyGptOss, engine.LoRAConfig{Rank: 3, Alpha: 8, Seed: 6}, 7, 0.1)
}

// A GPT-OSS adapter merges into an unquantised base (fused, interleaved,
// input-major experts) with the engine's on-the-fly logprobs within
// float32 rounding; an MXFP4 base and a PEFT export of experts are
// refused in one line.
func TestMergedGptOssMatchesAdapter(t *testing.T) {
	ad, base := gptOssAdapter(t), gptOssBase(t)
	out := filepath.Join(t.TempDir(), "merged")
	if _, err := Export(context.Background(), Options{Adapter: ad, Base: base, Out: out}); err != nil {
		t.Fatal(err)
	}
	want, got := referenceLogprobs(t, base, ad), servedLogprobs(t, out)
	t.Logf("merged vs adapter %g, base vs adapter %g", maxDiff(want, got), maxDiff(want, servedLogprobs(t, base)))
	if d := maxDiff(want, got); d > 1e-4 {
		t.Errorf("merged logprobs differ from base+adapter by %g", d)
	}
	if d := maxDiff(want, servedLogprobs(t, base)); d < 1e-2 {
		t.Errorf("the adapter changes logprobs by only %g: the test proves nothing", d)
	}
	mx := t.TempDir()
	cfg, _ := os.ReadFile(filepath.Join(base, "config.json"))
	writeFile(t, mx, "config.json", cfg)
	writeShards(t, mx, engine.Tensors{"model.layers.0.mlp.experts.gate_up_proj_blocks": {Shape: []int{1}, Data: []float32{0}}}, 1, safetensors.F32)
	if _, err := Export(context.Background(), Options{Adapter: ad, Base: mx, Out: filepath.Join(t.TempDir(), "x")}); err == nil ||
		!strings.Contains(err.Error(), "stores its experts as MXFP4") {
		t.Errorf("MXFP4 base: %v", err)
	}
	if _, err := Export(context.Background(), Options{Adapter: ad, Format: PEFT, Out: filepath.Join(t.TempDir(), "p")}); err == nil ||
		err.Error() != GptOssPEFTError {
		t.Errorf("PEFT export of GPT-OSS experts: %v", err)
	}
}
