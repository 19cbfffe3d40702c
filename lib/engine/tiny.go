package engine

import (
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strings"

	"github.com/tinkershell/tinker/lib/models"
)

// The built-in tiny models have the shapes listed in lib/models and weights
// drawn from a fixed PRNG seeded by the tensor name, so every machine builds
// the same bits with no download. The weights are UNTRAINED: the models
// produce printable-character noise, and exist so sampling, LoRA and the
// server can be exercised end to end.

// TinyModels lists the names Load accepts.
func TinyModels() []string {
	var out []string
	for _, a := range models.All() {
		if models.IsTiny(a.Name) {
			out = append(out, a.Name)
		}
	}
	return out
}

// TinyConfig returns the config of a built-in tiny model.
func TinyConfig(name string) (Config, error) {
	a, ok := models.Lookup(name)
	if !ok || !models.IsTiny(name) {
		return Config{}, fmt.Errorf("%q is not a built-in tiny model (have %v)", name, TinyModels())
	}
	c := Config{Shape: a.Shape, BOSTokenID: models.TinyBOS, EOSTokenIDs: []int{models.TinyEOS},
		NormTopKProb: a.Family == models.Qwen3MoE} // as Qwen3-30B-A3B's config.json sets it
	if a.Family == models.GptOss {
		// As gpt-oss-20b's config.json, but a window of 8 positions so
		// that short tests reach past it.
		no := false
		c.SlidingWindow, c.SwigluLimit = 8, 7
		c.LayerTypes = []string{"sliding_attention", "full_attention", "sliding_attention", "full_attention"}
		c.RopeScaling = &RopeScaling{Type: "yarn", Factor: 32, BetaFast: 32, BetaSlow: 1, OriginalMaxPositionEmbeddings: 4096, Truncate: &no}
	}
	if a.Family == models.DeepSeekV3 {
		// DeepSeek-V3.1's routing and YaRN (factor 40 from 4096 there;
		// here 4 from 1024, so the ramp crosses the 4 rotary pairs).
		c.Routing = &DeepSeekRouting{Groups: 3, TopKGroups: 2, ScalingFactor: 2.5, RopeInterleave: true}
		c.NormTopKProb = true
		c.RopeScaling = &RopeScaling{Type: "yarn", Factor: 4, BetaFast: 32, BetaSlow: 1, OriginalMaxPositionEmbeddings: 1024,
			MScale: 1, MScaleAllDim: 1}
	}
	if a.Family == models.Llama3 {
		// Llama 3.1's frequency scaling (factor 8 from an original context
		// of 256 to the 2048 of lib/models), so the tiny Llama exercises all
		// three bands: with theta 1e4 and head_dim 16, pairs 0-2 are kept,
		// pair 3 is interpolated and pairs 4-7 are divided by 8.
		c.RopeScaling = &RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4,
			OriginalMaxPositionEmbeddings: 256}
	}
	return c, c.Validate()
}

// TinyTensors returns the deterministic weights of a built-in tiny model
// under Hugging Face names.
func TinyTensors(name string) (Config, Tensors, error) {
	c, err := TinyConfig(name)
	if err != nil {
		return Config{}, nil, err
	}
	shapes := ExpectedShapes(c)
	ts := make(Tensors, len(shapes))
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		shape := shapes[n]
		data := make([]float32, shape[0]*shapeTail(shape))
		r := newRNG(seedOf(name + "/" + n))
		switch {
		case strings.HasSuffix(n, ".sinks"): // logits, in the scores' range
			fill(data, r, 1)
		case strings.HasSuffix(n, ".e_score_correction_bias"): // shifts the choice as trained ones do
			fill(data, r, 0.1)
		case strings.HasSuffix(n, ".bias"): // small: the residual stays the embeddings' scale
			fill(data, r, 0.05)
		case len(shape) == 1: // norm gains around 1
			for i := range data {
				data[i] = 1 + float32(0.2*(r.uniform32()-0.5))
			}
		case (c.Family == models.GptOss || c.Family == models.DeepSeekV3) && (strings.HasSuffix(n, "down_proj.weight") || strings.HasSuffix(n, "o_proj.weight")):
			// Smaller outputs of the attention (with biases and sinks) and
			// of the experts ((up+1)·glu is about twice SwiGLU) keep the
			// residual near the embeddings, so that, as in the other tiny
			// models, the text direction decides and samples are printable.
			fill(data, r, 0.25*math.Sqrt(3)/math.Sqrt(float64(shape[1])))
		case n == "model.embed_tokens.weight" || n == "lm_head.weight":
			fill(data, r, math.Sqrt(3)*tinyEmbedStd/math.Sqrt(float64(c.Hidden)))
			addTextDirection(data, c.Hidden, tinyTextBias)
		default: // Kaiming-uniform-like: unit-variance inputs keep their scale
			fill(data, r, math.Sqrt(3)/math.Sqrt(float64(shape[1])))
		}
		ts[n] = Tensor{Shape: shape, Data: data}
	}
	return c, ts, nil
}

// Embedding scales of the tiny models: each embedding row is noise with
// tinyEmbedStd/√hidden per element (a logit spread of about tinyEmbedStd for
// unit-RMS hidden states), plus, for text bytes, a shared direction of
// tinyTextBias/√hidden per element (see addTextDirection). Chosen by
// measurement: with these values about all sampled bytes are printable and
// temperature-1 samples vary rather than repeat one byte.
const (
	tinyEmbedStd = 1.5
	tinyTextBias = 4.0
)

// addTextDirection adds a shared direction to the embeddings of printable
// ASCII bytes (and newline). With tied embeddings this makes text tokens
// reinforce each other: a printable context pushes the hidden state along
// the direction, which raises every printable token's logit, so the
// untrained models emit mostly readable characters instead of raw bytes.
func addTextDirection(embed []float32, hidden int, scale float64) {
	r := newRNG(seedOf("text-direction"))
	dir := make([]float32, hidden)
	fill(dir, r, math.Sqrt(3)*scale/math.Sqrt(float64(hidden)))
	for t := 0; t < 256; t++ {
		if (t >= 32 && t < 127) || t == '\n' {
			row := embed[t*hidden : (t+1)*hidden]
			for i := range row {
				row[i] += dir[i]
			}
		}
	}
}

func shapeTail(s []int) int {
	n := 1
	for _, d := range s[1:] {
		n *= d
	}
	return n
}

func fill(data []float32, r *rng, a float64) {
	for i := range data {
		data[i] = float32(a * (2*float64(r.uniform32()) - 1))
	}
}

func seedOf(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// ExpectedShapes lists every base parameter of a model with config c under
// its Hugging Face name.
func ExpectedShapes(c Config) map[string][]int {
	h, qd, kvd := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	s := map[string][]int{
		"model.embed_tokens.weight": {c.VocabSize, h},
		"model.norm.weight":         {h},
	}
	if !c.TieWordEmbeddings {
		s["lm_head.weight"] = []int{c.VocabSize, h}
	}
	for i := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		s[p+"input_layernorm.weight"] = []int{h}
		s[p+"post_attention_layernorm.weight"] = []int{h}
		if c.MLA != nil {
			deepseekShapes(c, i, p, s)
			continue
		}
		s[p+"self_attn.q_proj.weight"] = []int{qd, h}
		s[p+"self_attn.k_proj.weight"] = []int{kvd, h}
		s[p+"self_attn.v_proj.weight"] = []int{kvd, h}
		s[p+"self_attn.o_proj.weight"] = []int{h, qd}
		if c.IsMoELayer(i) {
			moeShapes(c, p, s)
		} else {
			s[p+"mlp.gate_proj.weight"] = []int{c.Intermediate, h}
			s[p+"mlp.up_proj.weight"] = []int{c.Intermediate, h}
			s[p+"mlp.down_proj.weight"] = []int{h, c.Intermediate}
		}
		if c.hasQKNorm() {
			s[p+"self_attn.q_norm.weight"] = []int{c.HeadDim}
			s[p+"self_attn.k_norm.weight"] = []int{c.HeadDim}
		}
	}
	return s
}
