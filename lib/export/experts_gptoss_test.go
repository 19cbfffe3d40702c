package export

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
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
func gptOssBase(t *testing.T) string { return gptOssBaseOf(t, false) }

// gptOssBaseOf is gptOssBase; with mxfp4 the expert weights are instead
// random MXFP4 codes (blocks and scales), as the released checkpoints
// store them.
func gptOssBaseOf(t *testing.T, mxfp4 bool) string {
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
	if mxfp4 { // as the released config.json says it
		cfg = []byte(strings.Replace(string(cfg), "{", `{"quantization_config": {"quant_method": "mxfp4"},`, 1))
	}
	writeFile(t, dir, "config.json", cfg)
	writeFile(t, dir, "tokenizer.json", tokenizer.TinyJSON())
	if !mxfp4 {
		writeShards(t, dir, ts, 2, safetensors.F32)
		return dir
	}
	var out []safetensors.Tensor
	r := rand.New(rand.NewPCG(9, 10))
	for _, name := range slices.Sorted(maps.Keys(ts)) { // sorted: the same codes every run
		x := ts[name]
		if p, ok := strings.CutSuffix(name, "_proj"); ok && !strings.HasSuffix(name, "bias") {
			sh := x.Shape // [E, in, out]: MXFP4 stores [E, out, in/32, 16]
			blocks, scales := make([]byte, sh[0]*sh[2]*sh[1]/2), make([]byte, sh[0]*sh[2]*sh[1]/32)
			for i := range blocks {
				blocks[i] = byte(r.IntN(256))
			}
			for i := range scales {
				scales[i] = byte(122 + r.IntN(3))
			}
			out = append(out, safetensors.Tensor{Name: p + "_proj_blocks", DType: safetensors.U8, Shape: []int64{int64(sh[0]), int64(sh[2]), int64(sh[1] / 32), 16}, Data: blocks},
				safetensors.Tensor{Name: p + "_proj_scales", DType: safetensors.U8, Shape: []int64{int64(sh[0]), int64(sh[2]), int64(sh[1] / 32)}, Data: scales})
			continue
		}
		out = append(out, encodeTensor(t, name, x, safetensors.F32))
	}
	if err := safetensors.WriteDir(dir, [][]safetensors.Tensor{out}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// gptOssAdapter is a tiny-gpt-oss adapter on every matrix, random B.
func gptOssAdapter(t *testing.T) string {
	return trainedAdapter(t, models.TinyGptOss, engine.LoRAConfig{Rank: 3, Alpha: 8, Seed: 6}, 7, 0.1)
}

// A GPT-OSS adapter merges into an unquantised base (fused, interleaved,
// input-major experts) with the engine's on-the-fly logprobs within
// float32 rounding, and into an MXFP4 one dequantised (written float32
// or bfloat16); a PEFT export of experts is refused in one line.
func TestMergedGptOssMatchesAdapter(t *testing.T) {
	ad, base := gptOssAdapter(t), gptOssBase(t)
	sharedOuter(t, ad, 8)
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
	// The released checkpoints' MXFP4 experts merge dequantised.
	mx := gptOssBaseOf(t, true)
	mout := filepath.Join(t.TempDir(), "merged-mxfp4")
	if _, err := Export(context.Background(), Options{Adapter: ad, Base: mx, Out: mout, DType: "float32"}); err != nil {
		t.Fatal(err)
	}
	want, got = referenceLogprobs(t, mx, ad), servedLogprobs(t, mout)
	t.Logf("MXFP4: merged vs adapter %g", maxDiff(want, got))
	if d := maxDiff(want, got); d > 1e-4 {
		t.Errorf("merged MXFP4 logprobs differ from base+adapter by %g", d)
	}
	// With --dtype bfloat16 the dequantised experts are written bfloat16
	// (exact for MXFP4 values; the merged ones round once), and config.json
	// says so.
	bout := filepath.Join(t.TempDir(), "merged-bf16")
	if _, err := Export(context.Background(), Options{Adapter: ad, Base: mx, Out: bout, DType: "bfloat16"}); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := os.ReadFile(filepath.Join(bout, "config.json")); strings.Contains(string(cfg), "quantization_config") || !strings.Contains(string(cfg), `"bfloat16"`) {
		t.Errorf("merged MXFP4 config.json:\n%s", cfg)
	}
	f, err := safetensors.ReadFile(filepath.Join(bout, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if x, ok := f.Tensor("model.layers.1.mlp.experts.down_proj"); !ok || x.DType != safetensors.BF16 || fmt.Sprint(x.Shape) != "[8 64 128]" {
		t.Errorf("dense down_proj: %v", x)
	}
}
