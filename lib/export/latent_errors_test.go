package export

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// Bad DeepSeek / Kimi inputs are refused in one line naming the problem,
// and nothing is written.
func TestLatentRefusals(t *testing.T) {
	cases := map[string]struct {
		kimi   bool
		break_ func(t *testing.T, fx *latentFixture)
		want   string
	}{
		"fp8 without block size": {false, func(t *testing.T, fx *latentFixture) {
			setConfig(t, fx.base, "quantization_config", map[string]any{"quant_method": "fp8"})
		}, "weight_block_size"},
		"unknown quantisation": {false, func(t *testing.T, fx *latentFixture) {
			setConfig(t, fx.base, "quantization_config", map[string]any{"quant_method": "awq"})
		}, `quant_method "awq"`},
		"int4 of 3 bits": {true, func(t *testing.T, fx *latentFixture) {
			setConfig(t, fx.base, "quantization_config", map[string]any{"quant_method": "compressed-tensors", "format": "pack-quantized",
				"config_groups": map[string]any{"g": map[string]any{"weights": map[string]any{"num_bits": 3, "group_size": 16, "symmetric": true}}}})
		}, "symmetric 4-bit"},
		"expert counts differ": {false, func(t *testing.T, fx *latentFixture) {
			retensor(t, fx.adapter, "base_model.model.model.layers.1.mlp.experts.w1.lora_A.weight", []int64{2, fxRank, fxHidden})
		}, "lora_A for 2 experts and lora_B for 3"},
		"not a latent module": {false, func(t *testing.T, fx *latentFixture) {
			retensorName(t, fx.adapter, "base_model.model.model.layers.0.self_attn.o_proj.lora_A.weight", "base_model.model.model.layers.0.self_attn.x_proj.lora_A.weight")
		}, "not a DeepSeek V3 / Kimi K2 projection"},
	}
	for name, c := range cases {
		fx := newLatentFixture(t, c.kimi)
		c.break_(t, fx)
		out := filepath.Join(t.TempDir(), "out")
		_, err := Export(context.Background(), Options{Adapter: fx.adapter, Base: fx.base, Out: out})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line with %q", name, err, c.want)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%s: output written", name)
		}
	}
}

// retensor rewrites one adapter tensor with a new shape (values zero).
func retensor(t *testing.T, dir, name string, shape []int64) {
	editAdapter(t, dir, func(x *safetensors.Tensor) {
		if x.Name == name {
			n := int64(4)
			for _, d := range shape {
				n *= d
			}
			x.Shape, x.Data = shape, make([]byte, n)
		}
	})
}

func retensorName(t *testing.T, dir, name, to string) {
	editAdapter(t, dir, func(x *safetensors.Tensor) {
		if x.Name == name {
			x.Name = to
		}
	})
}

func editAdapter(t *testing.T, dir string, f func(*safetensors.Tensor)) {
	path := filepath.Join(dir, "adapter_model.safetensors")
	var ts []safetensors.Tensor
	for _, x := range readTensorsFile(t, path) {
		x.Data = append([]byte(nil), x.Data...)
		f(&x)
		ts = append(ts, x)
	}
	writeTensorShards(t, dir, ts, 0)
}
