package engine

import (
	"fmt"
	"slices"

	"github.com/tinkershell/tinker/lib/models"
)

// Tensor is a dense tensor in row-major order: float32 values in Data, or,
// for bfloat16 matrices kept at half the memory, raw bfloat16 bits in BF16.
type Tensor struct {
	Shape []int
	Data  []float32
	BF16  []uint16
}

// Tensors maps Hugging Face parameter names (e.g.
// "model.layers.0.self_attn.q_proj.weight") to tensors.
type Tensors map[string]Tensor

type layerWeights struct {
	attnNorm, mlpNorm   []float32
	q, k, v, o          mat
	qBias, kBias, vBias []float32 // optional (nil when the checkpoint has none)
	oBias               []float32
	qNorm, kNorm        []float32   // Qwen3 only
	sinks               []float32   // GPT-OSS: each head's sink logit
	gate, up, down      mat         // dense MLP (DeepSeek's MoE layers: the shared experts)
	moe                 *moeWeights // instead, in a mixture-of-experts layer
	mla                 *mlaWeights // DeepSeek's latent attention instead of q, k and v (mla.go)
}

// weights are the base parameters. They are read-only after loading, so one
// copy is shared by every sampler and adapter of the model.
type weights struct {
	embed  mat // [vocab, hidden]
	layers []layerWeights
	norm   []float32
	lmHead mat // aliases embed when tied
}

// buildWeights checks names and shapes against the config and arranges the
// tensors for the forward pass. It does not copy tensor data.
func buildWeights(c Config, ts Tensors) (*weights, error) {
	get := func(name string, shape ...int) ([]float32, error) {
		t, ok := ts[name]
		if !ok {
			return nil, fmt.Errorf("weights: missing tensor %s", name)
		}
		if !slices.Equal(t.Shape, shape) {
			return nil, fmt.Errorf("weights: tensor %s has shape %v, config implies %v", name, t.Shape, shape)
		}
		n := 1
		for _, d := range shape {
			n *= d
		}
		if len(t.Data) != n && !(len(shape) == 2 && t.Data == nil && len(t.BF16) == n) {
			return nil, fmt.Errorf("weights: tensor %s has %d values for shape %v", name, max(len(t.Data), len(t.BF16)), shape)
		}
		return t.Data, nil
	}
	getMat := func(name string, rows, cols int) (mat, error) {
		d, err := get(name, rows, cols)
		if err == nil && d == nil {
			return mat{rows: rows, cols: cols, bf: ts[name].BF16}, nil
		}
		return mat{rows: rows, cols: cols, data: d}, err
	}
	optional := func(name string, n int) ([]float32, error) {
		if _, ok := ts[name]; !ok {
			return nil, nil
		}
		return get(name, n)
	}
	h, qd, kvd := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	w := &weights{layers: make([]layerWeights, c.Layers)}
	var err error
	if w.embed, err = getMat("model.embed_tokens.weight", c.VocabSize, h); err != nil {
		return nil, err
	}
	if w.norm, err = get("model.norm.weight", h); err != nil {
		return nil, err
	}
	if _, ok := ts["lm_head.weight"]; ok && !c.TieWordEmbeddings {
		if w.lmHead, err = getMat("lm_head.weight", c.VocabSize, h); err != nil {
			return nil, err
		}
	} else if c.TieWordEmbeddings {
		w.lmHead = w.embed
	} else {
		return nil, fmt.Errorf("weights: missing tensor lm_head.weight (and tie_word_embeddings is false)")
	}
	for i := range w.layers {
		l := &w.layers[i]
		p := fmt.Sprintf("model.layers.%d.", i)
		if c.MLA != nil {
			if err := buildDeepSeekLayer(c, i, p, l, get, getMat); err != nil {
				return nil, err
			}
			continue
		}
		steps := []func() error{
			func() (e error) { l.attnNorm, e = get(p+"input_layernorm.weight", h); return },
			func() (e error) { l.mlpNorm, e = get(p+"post_attention_layernorm.weight", h); return },
			func() (e error) { l.q, e = getMat(p+"self_attn.q_proj.weight", qd, h); return },
			func() (e error) { l.k, e = getMat(p+"self_attn.k_proj.weight", kvd, h); return },
			func() (e error) { l.v, e = getMat(p+"self_attn.v_proj.weight", kvd, h); return },
			func() (e error) { l.o, e = getMat(p+"self_attn.o_proj.weight", h, qd); return },
			func() (e error) { l.qBias, e = optional(p+"self_attn.q_proj.bias", qd); return },
			func() (e error) { l.kBias, e = optional(p+"self_attn.k_proj.bias", kvd); return },
			func() (e error) { l.vBias, e = optional(p+"self_attn.v_proj.bias", kvd); return },
			func() (e error) { l.oBias, e = optional(p+"self_attn.o_proj.bias", h); return },
		}
		if c.Family == models.GptOss {
			steps = append(steps, func() (e error) { l.sinks, e = get(p+"self_attn.sinks", c.Heads); return })
		}
		if c.IsMoELayer(i) {
			steps = append(steps, func() (e error) {
				l.moe, e = buildMoE(c, p, getMat, func(n string, d int) ([]float32, error) { return get(n, d) })
				return
			})
		} else {
			steps = append(steps,
				func() (e error) { l.gate, e = getMat(p+"mlp.gate_proj.weight", c.Intermediate, h); return },
				func() (e error) { l.up, e = getMat(p+"mlp.up_proj.weight", c.Intermediate, h); return },
				func() (e error) { l.down, e = getMat(p+"mlp.down_proj.weight", h, c.Intermediate); return },
			)
		}
		if c.hasQKNorm() {
			steps = append(steps,
				func() (e error) { l.qNorm, e = get(p+"self_attn.q_norm.weight", c.HeadDim); return },
				func() (e error) { l.kNorm, e = get(p+"self_attn.k_norm.weight", c.HeadDim); return },
			)
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return nil, err
			}
		}
	}
	return w, nil
}
