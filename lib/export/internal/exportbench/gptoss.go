package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// The GPT-OSS model (-model gptoss): gpt-oss-20b's layer shapes (32
// experts, hidden and expert width 2880) over four layers, the experts in
// MXFP4 as released (blocks of 32 E2M1 codes with a power-of-two scale
// byte), everything else in bfloat16: about 1.9 GB in four shards, one a
// layer. The adapter is rank 32 on attention and every expert; the merge
// requantises the experts to MXFP4.
const (
	gHidden, gInter, gExperts, gLayers, gHeads, gKV, gHeadDim = 2880, 2880, 32, 4, 64, 8, 64
)

func gptOssTensors(layer int) []safetensors.TensorInfo {
	bf := func(name string, shape ...int64) safetensors.TensorInfo {
		return safetensors.TensorInfo{Name: name, DType: safetensors.BF16, Shape: shape}
	}
	u8 := func(name string, shape ...int64) safetensors.TensorInfo {
		return safetensors.TensorInfo{Name: name, DType: safetensors.U8, Shape: shape}
	}
	var ts []safetensors.TensorInfo
	switch layer {
	case 0:
		ts = append(ts, bf("model.embed_tokens.weight", vocab, gHidden))
	case gLayers - 1:
		ts = append(ts, bf("lm_head.weight", vocab, gHidden), bf("model.norm.weight", gHidden))
	}
	p := fmt.Sprintf("model.layers.%d.", layer)
	for _, m := range gptOssAttention(layer) {
		ts = append(ts, bf(m.name+".weight", int64(m.rows), int64(m.cols)), bf(m.name+".bias", int64(m.rows)))
	}
	ts = append(ts, bf(p+"self_attn.sinks", gHeads), bf(p+"input_layernorm.weight", gHidden), bf(p+"post_attention_layernorm.weight", gHidden),
		bf(p+"mlp.router.weight", gExperts, gHidden), bf(p+"mlp.router.bias", gExperts))
	for _, x := range []struct {
		name    string
		out, in int64
	}{{"gate_up_proj", 2 * gInter, gHidden}, {"down_proj", gHidden, gInter}} {
		q := p + "mlp.experts." + x.name
		ts = append(ts, u8(q+"_blocks", gExperts, x.out, x.in/32, 16), u8(q+"_scales", gExperts, x.out, x.in/32), bf(q+"_bias", gExperts, x.out))
	}
	return ts
}

func gptOssAttention(layer int) []tensorSpec {
	p := fmt.Sprintf("model.layers.%d.self_attn.", layer)
	return []tensorSpec{{p + "q_proj", gHeads * gHeadDim, gHidden}, {p + "k_proj", gKV * gHeadDim, gHidden},
		{p + "v_proj", gKV * gHeadDim, gHidden}, {p + "o_proj", gHidden, gHeads * gHeadDim}}
}

// writeGptOssBase writes config.json, the shards and their index.
func writeGptOssBase(dir string) (total, largest int64, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, err
	}
	layerTypes := make([]string, gLayers)
	for i := range layerTypes {
		layerTypes[i] = []string{"sliding_attention", "full_attention"}[i%2]
	}
	cfg := map[string]any{"model_type": "gpt_oss", "architectures": []string{"GptOssForCausalLM"}, "vocab_size": vocab,
		"hidden_size": gHidden, "intermediate_size": gInter, "num_hidden_layers": gLayers, "num_attention_heads": gHeads,
		"num_key_value_heads": gKV, "head_dim": gHeadDim, "num_local_experts": gExperts, "experts_per_token": 4,
		"num_experts_per_tok": 4, "sliding_window": 128, "layer_types": layerTypes, "swiglu_limit": 7.0,
		"rms_norm_eps": 1e-5, "rope_theta": 150000.0, "tie_word_embeddings": false, "max_position_embeddings": 131072,
		"rope_scaling": map[string]any{"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": false,
			"original_max_position_embeddings": 4096},
		"attention_bias": true, "hidden_act": "silu", "torch_dtype": "bfloat16", "quantization_config": map[string]any{"quant_method": "mxfp4"}}
	if err := writeJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		return 0, 0, err
	}
	return writeShardsOf(dir, gLayers, gptOssTensors, writeGptOssShard, rand.New(rand.NewPCG(11, 12)))
}

// writeGptOssShard writes random MXFP4 codes, scale bytes for values
// near 0.01-0.06, and bfloat16 around 0.02.
func writeGptOssShard(path string, ts []safetensors.TensorInfo, r *rand.Rand) (int64, error) {
	return writeLayout(path, ts, func(t safetensors.TensorInfo, w io.Writer, buf []byte) error {
		switch {
		case strings.HasSuffix(t.Name, "_blocks"):
			return randomBytes(w, t.Bytes(), r, buf)
		case strings.HasSuffix(t.Name, "_scales"):
			b := make([]byte, t.Bytes())
			for i := range b {
				b[i] = byte(119 + r.IntN(3))
			}
			_, err := w.Write(b)
			return err
		}
		return randomBF16(w, t.Bytes(), 0.02, r, buf)
	})
}

// writeGptOssAdapter writes rank-32 float32 factors on attention and on
// every expert's gate, up and down projections (per expert, as PEFT
// names them).
func writeGptOssAdapter(dir string) (int64, error) {
	cfg := map[string]any{"r": rank, "lora_alpha": 32, "peft_type": "LORA"}
	var mods []tensorSpec
	for i := range gLayers {
		mods = append(mods, gptOssAttention(i)...)
		for e := range gExperts {
			p := fmt.Sprintf("model.layers.%d.mlp.experts.%d.", i, e)
			mods = append(mods, tensorSpec{p + "gate_proj", gInter, gHidden}, tensorSpec{p + "up_proj", gInter, gHidden}, tensorSpec{p + "down_proj", gHidden, gInter})
		}
	}
	return writePairs(dir, cfg, mods, rand.New(rand.NewPCG(13, 14)))
}
