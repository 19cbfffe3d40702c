package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// The MoE model: DeepSeek-V3-shaped (latent attention, one dense layer,
// then routed and shared experts), every linear map in FP8 with a
// float32 scale per 128×128 block as DeepSeek V3.1 ships, embeddings,
// norms and routers in bfloat16: about 2.6 GB in six shards. The adapter
// is the service's layout at rank 32 on attention, MLPs, experts (hidden
// side shared) and the unembedding; the merge requantises what it adapts.
const (
	dsHidden, dsLayers, dsDenseInter, dsExperts, dsMoEInter = 2048, 12, 5632, 64, 512
	dsHeads, dsQLora, dsKVLora, dsRope, dsNope, dsV         = 16, 768, 256, 64, 64, 64
	dsShards, dsBlock                                       = 6, 128
)

type dsTensor struct {
	name       string
	rows, cols int
	fp8        bool
}

// dsLinear lists layer i's linear maps ([out, in], name without .weight).
func dsLinear(i int) []dsTensor {
	p := fmt.Sprintf("model.layers.%d.", i)
	ts := []dsTensor{{p + "self_attn.q_a_proj", dsQLora, dsHidden, true}, {p + "self_attn.q_b_proj", dsHeads * (dsNope + dsRope), dsQLora, true},
		{p + "self_attn.kv_a_proj_with_mqa", dsKVLora + dsRope, dsHidden, true}, {p + "self_attn.kv_b_proj", dsHeads * (dsNope + dsV), dsKVLora, true},
		{p + "self_attn.o_proj", dsHidden, dsHeads * dsV, true}}
	mlp := func(q string, inter int) {
		ts = append(ts, dsTensor{q + "gate_proj", inter, dsHidden, true}, dsTensor{q + "up_proj", inter, dsHidden, true}, dsTensor{q + "down_proj", dsHidden, inter, true})
	}
	if i == 0 {
		mlp(p+"mlp.", dsDenseInter)
		return ts
	}
	mlp(p+"mlp.shared_experts.", dsMoEInter)
	for e := range dsExperts {
		mlp(fmt.Sprintf("%smlp.experts.%d.", p, e), dsMoEInter)
	}
	return ts
}

// dsTensors lists the stored tensors: FP8 weights with their scales.
func dsTensors() []safetensors.TensorInfo {
	return dsLayout(func(t dsTensor) []safetensors.TensorInfo {
		return []safetensors.TensorInfo{{Name: t.name + ".weight", DType: safetensors.F8E4M3, Shape: []int64{int64(t.rows), int64(t.cols)}},
			{Name: t.name + ".weight_scale_inv", DType: safetensors.F32,
				Shape: []int64{int64((t.rows + dsBlock - 1) / dsBlock), int64((t.cols + dsBlock - 1) / dsBlock)}}}
	})
}

// bf16Info is a bfloat16 tensor's entry.
func bf16Info(name string, shape ...int64) safetensors.TensorInfo {
	return safetensors.TensorInfo{Name: name, DType: safetensors.BF16, Shape: shape}
}

// dsLayout lists the DeepSeek-shaped model's stored tensors in order: the
// embedding, norms, head and router in bfloat16, and each linear layer
// as linear stores it.
func dsLayout(linear func(dsTensor) []safetensors.TensorInfo) []safetensors.TensorInfo {
	ts := []safetensors.TensorInfo{bf16Info("model.embed_tokens.weight", vocab, dsHidden), bf16Info("model.norm.weight", dsHidden), bf16Info("lm_head.weight", vocab, dsHidden)}
	for i := range dsLayers {
		p := fmt.Sprintf("model.layers.%d.", i)
		ts = append(ts, bf16Info(p+"input_layernorm.weight", dsHidden), bf16Info(p+"post_attention_layernorm.weight", dsHidden))
		if i > 0 {
			ts = append(ts, bf16Info(p+"mlp.gate.weight", dsExperts, dsHidden))
		}
		for _, t := range dsLinear(i) {
			ts = append(ts, linear(t)...)
		}
	}
	return ts
}

// dsConfig is the DeepSeek-shaped model's config.json as model type mt
// with quantization_config q.
func dsConfig(mt string, q map[string]any) map[string]any {
	return map[string]any{"model_type": mt, "architectures": []string{"DeepseekV3ForCausalLM"}, "vocab_size": vocab,
		"hidden_size": dsHidden, "intermediate_size": dsDenseInter, "moe_intermediate_size": dsMoEInter, "num_hidden_layers": dsLayers,
		"num_attention_heads": dsHeads, "num_key_value_heads": dsHeads, "n_routed_experts": dsExperts, "n_shared_experts": 1,
		"num_experts_per_tok": 8, "first_k_dense_replace": 1, "q_lora_rank": dsQLora, "kv_lora_rank": dsKVLora,
		"qk_rope_head_dim": dsRope, "qk_nope_head_dim": dsNope, "v_head_dim": dsV, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
		"quantization_config": q}
}

// writeDeepSeekBase writes config.json, the shards and their index.
func writeDeepSeekBase(dir string) (total, largest int64, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, err
	}
	cfg := dsConfig("deepseek_v3", map[string]any{"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": []int{dsBlock, dsBlock}})
	if err := writeJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		return 0, 0, err
	}
	return writeShardsOf(dir, dsShards, companionSplit(dsTensors()), writeTyped, rand.New(rand.NewPCG(5, 6)))
}

// writeTyped writes random values of each tensor's dtype: FP8 codes
// (never NaN), scales near 1e-3, bfloat16 around 0.02.
func writeTyped(path string, ts []safetensors.TensorInfo, r *rand.Rand) (int64, error) {
	return writeLayout(path, ts, func(t safetensors.TensorInfo, w io.Writer, buf []byte) error {
		switch t.DType {
		case safetensors.F8E4M3:
			return randomFP8(w, t.Bytes(), r, buf)
		case safetensors.F32:
			return randomScales(w, t.Bytes(), r)
		}
		return randomBF16(w, t.Bytes(), 0.02, r, buf)
	})
}

// randomFP8 writes n random E4M3 bytes, none of them NaN (0x7f, 0xff).
func randomFP8(w io.Writer, n int64, r *rand.Rand, buf []byte) error {
	return randomFixed(w, n, r, buf, func(b []byte) {
		for i := range b {
			if b[i]&0x7f == 0x7f {
				b[i]--
			}
		}
	})
}

func randomScales(w io.Writer, n int64, r *rand.Rand) error {
	b := make([]byte, n)
	for i := int64(0); i < n; i += 4 {
		binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(0.0005+0.001*r.Float64())))
	}
	_, err := w.Write(b)
	return err
}

// writeDeepSeekAdapter writes the service's adapter layout, float32.
func writeDeepSeekAdapter(dir string) (int64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	cfg := map[string]any{"r": rank, "lora_alpha": 32, "peft_type": "LORA", "base_model_name_or_path": "deepseek-ai/DeepSeek-V3.1"}
	if err := writeJSON(filepath.Join(dir, "adapter_config.json"), cfg); err != nil {
		return 0, err
	}
	var out []safetensors.Tensor
	var size int64
	r := rand.New(rand.NewPCG(7, 8))
	add := func(name string, sd float64, shape ...int64) {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * sd)
		}
		b, _ := safetensors.EncodeFloat32(safetensors.F32, v)
		out = append(out, safetensors.Tensor{Name: "base_model.model." + name, DType: safetensors.F32, Shape: shape, Data: b})
		size += 4 * n
	}
	pair := func(path string, out, in int64) {
		add(path+".lora_A.weight", 1/math.Sqrt(float64(in)), rank, in)
		add(path+".lora_B.weight", 1e-3, out, rank)
	}
	for i := range dsLayers {
		p := fmt.Sprintf("model.layers.%d.", i)
		for _, t := range dsLinear(i)[:5] {
			if t.name != p+"self_attn.q_b_proj" && t.name != p+"self_attn.kv_b_proj" {
				pair(t.name, int64(t.rows), int64(t.cols))
			}
		}
		q, inter := p+"mlp.", int64(dsDenseInter)
		if i > 0 {
			q, inter = p+"mlp.shared_experts.", dsMoEInter
			e, h, w := int64(dsExperts), int64(dsHidden), int64(dsMoEInter)
			for _, k := range []string{"w1", "w3"} {
				add(p+"mlp.experts."+k+".lora_A.weight", 1/math.Sqrt(float64(h)), 1, rank, h)
				add(p+"mlp.experts."+k+".lora_B.weight", 1e-3, e, w, rank)
			}
			add(p+"mlp.experts.w2.lora_A.weight", 1/math.Sqrt(float64(w)), e, rank, w)
			add(p+"mlp.experts.w2.lora_B.weight", 1e-3, 1, h, rank)
		}
		pair(q+"gate_proj", inter, dsHidden)
		pair(q+"up_proj", inter, dsHidden)
		pair(q+"down_proj", dsHidden, inter)
	}
	pair("model.unembed_tokens", vocab, dsHidden)
	f, err := os.Create(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return size, safetensors.Write(f, out, nil)
}
