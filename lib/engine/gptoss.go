package engine

import (
	"fmt"
	"math"

	"github.com/tinkershell/tinker/lib/models"
)

// GPT-OSS (gpt_oss), from transformers' modeling_gpt_oss.py: Llama-style
// layers with biases on q/k/v/o, a learned attention "sink" logit per
// head that joins each softmax's denominator, sliding-window (the last
// sliding_window positions) and full attention alternating as
// layer_types says, YaRN rotary scaling, and a mixture of experts whose
// router (with a bias) keeps the top-k logits and softmaxes over them,
// and whose experts (with biases) compute (clamp(up)+1)·g·σ(1.702·g) with
// g = min(gate, limit). The engine stores the experts under the
// per-expert names Qwen3-MoE uses (gptoss_load.go converts a checkpoint's
// fused, interleaved, possibly MXFP4 tensors).

// gptOssAlpha is the sigmoid's slope in GPT-OSS's gated activation.
const gptOssAlpha = 1.702

func parseGptOss(c *Config, h *hfConfig) {
	c.Experts = max(h.NumLocalExperts, h.NumExperts)
	c.ExpertsPerToken = max(h.NumExpertsPerTok, h.ExpertsPerToken)
	c.MoEIntermediate = h.IntermediateSize
	c.SlidingWindow, c.SwigluLimit = h.SlidingWindow, h.SwigluLimit
	if c.SwigluLimit == 0 {
		c.SwigluLimit = 7
	}
	c.LayerTypes = h.LayerTypes
	if len(c.LayerTypes) == 0 && h.NumHiddenLayers > 0 && h.NumHiddenLayers <= 1<<16 {
		// transformers' default: even layers slide, odd layers see everything.
		for i := range h.NumHiddenLayers {
			c.LayerTypes = append(c.LayerTypes, map[bool]string{true: "sliding_attention", false: "full_attention"}[i%2 == 0])
		}
	}
}

func (c Config) validateGptOss() error {
	if c.Family != models.GptOss {
		if c.SlidingWindow != 0 || len(c.LayerTypes) > 0 {
			return fmt.Errorf("model config: sliding-window attention is supported for gpt_oss only")
		}
		return nil
	}
	if len(c.LayerTypes) != c.Layers {
		return fmt.Errorf("model config: layer_types has %d entries for %d layers", len(c.LayerTypes), c.Layers)
	}
	for _, t := range c.LayerTypes {
		if t != "sliding_attention" && t != "full_attention" {
			return fmt.Errorf("model config: layer type %q is not supported (sliding_attention, full_attention)", t)
		}
		if t == "sliding_attention" && c.SlidingWindow <= 0 {
			return fmt.Errorf("model config: sliding_attention layers need a positive sliding_window")
		}
	}
	if c.SwigluLimit <= 0 {
		return fmt.Errorf("model config: swiglu_limit must be positive")
	}
	return nil
}

func gptOssJSON(c Config, m map[string]any) {
	m["num_local_experts"], m["num_experts_per_tok"], m["intermediate_size"] = c.Experts, c.ExpertsPerToken, c.MoEIntermediate
	m["sliding_window"], m["layer_types"], m["swiglu_limit"] = c.SlidingWindow, c.LayerTypes, c.SwigluLimit
	m["attention_bias"] = true
}

// window is how many positions layer li attends to (itself included);
// 0 means all of them.
func (c Config) window(li int) int {
	if li < len(c.LayerTypes) && c.LayerTypes[li] == "sliding_attention" {
		return c.SlidingWindow
	}
	return 0
}

// yarnInvFreq applies YaRN to the inverse frequencies: the low
// frequencies (long wavelengths) are divided by factor, the high ones
// kept, with a linear ramp between the dimensions where the original
// context holds beta_fast and beta_slow rotations.
func yarnInvFreq(c Config, inv []float64) {
	s := c.RopeScaling
	dim := float64(c.HeadDim)
	betaFast, betaSlow := cmpOr(s.BetaFast, 32), cmpOr(s.BetaSlow, 1)
	corr := func(rot float64) float64 {
		return dim * math.Log(float64(s.OriginalMaxPositionEmbeddings)/(rot*2*math.Pi)) / (2 * math.Log(c.RopeTheta))
	}
	lo, hi := corr(betaFast), corr(betaSlow)
	if s.Truncate == nil || *s.Truncate {
		lo, hi = math.Floor(lo), math.Ceil(hi)
	}
	lo, hi = max(lo, 0), min(hi, dim-1)
	if lo == hi {
		hi += 0.001
	}
	for i, f := range inv {
		ramp := min(max((float64(i)-lo)/(hi-lo), 0), 1)
		extra := 1 - ramp // the share kept unscaled
		inv[i] = float64(f/s.Factor*(1-extra)) + float64(f*extra)
	}
}

// ropeAttentionScale is the factor YaRN multiplies cos and sin by
// (0.1·ln(factor) + 1); 1 for other scalings.
func ropeAttentionScale(c Config) float64 {
	s := c.RopeScaling
	switch {
	case s == nil || s.Type != "yarn":
		return 1
	case s.AttentionFactor != 0:
		return s.AttentionFactor
	case s.MScale != 0 && s.MScaleAllDim != 0: // DeepSeek-V3's ratio
		return yarnMScale(s.Factor, s.MScale) / yarnMScale(s.Factor, s.MScaleAllDim)
	case s.Factor > 1:
		return 0.1*math.Log(s.Factor) + 1
	}
	return 1
}

func cmpOr(x, def float64) float64 {
	if x == 0 {
		return def
	}
	return x
}

// gptOssAct writes GPT-OSS's gated activation of gate g and up u into h
// (h may alias g): (clamp(u, ±limit) + 1)·g'·σ(α·g') with g' = min(g,
// limit), in float64 with exp64.
func gptOssAct(limit float64, h, g, u []float32) {
	u = u[:len(g)]
	for j, gv := range g {
		gc := min(float64(gv), limit)
		uc := min(max(float64(u[j]), -limit), limit)
		h[j] = float32((uc + 1) * gc / (1 + exp64(-gptOssAlpha*gc)))
	}
}

// gptOssActBackward takes dh in dg and replaces it with the gradient of
// g, writing u's into du (clamped inputs get none, as torch's clamp
// gives).
func gptOssActBackward(limit float64, dg, du, g, u []float32) {
	du, g, u = du[:len(dg)], g[:len(dg)], u[:len(dg)]
	for j, dh := range dg {
		gc, uv := min(float64(g[j]), limit), float64(u[j])
		uc := min(max(uv, -limit), limit)
		sig := 1 / (1 + exp64(-gptOssAlpha*gc))
		glu := gc * sig
		du[j] = 0
		if uv >= -limit && uv <= limit {
			du[j] = float32(float64(dh) * glu)
		}
		dg[j] = 0
		if float64(g[j]) <= limit {
			dg[j] = float32(float64(dh) * (uc + 1) * (sig + float64(gptOssAlpha*gc*sig*(1-sig))))
		}
	}
}

// gptOssShapes adds a GPT-OSS layer's biases and sinks to s (the weights
// are the other families').
func gptOssShapes(c Config, p string, s map[string][]int) {
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	for name, n := range map[string]int{"q_proj": qd, "k_proj": kvd, "v_proj": kvd, "o_proj": c.Hidden} {
		s[p+"self_attn."+name+".bias"] = []int{n}
	}
	s[p+"self_attn.sinks"] = []int{c.Heads}
	s[p+"mlp.router.bias"] = []int{c.Experts}
	for e := range c.Experts {
		s[expertBias(p, e, "gate_proj")] = []int{c.MoEIntermediate}
		s[expertBias(p, e, "up_proj")] = []int{c.MoEIntermediate}
		s[expertBias(p, e, "down_proj")] = []int{c.Hidden}
	}
}

func expertBias(p string, e int, proj string) string {
	return fmt.Sprintf("%smlp.experts.%d.%s.bias", p, e, proj)
}

// gptOssBiases reads a layer's router and expert biases.
func gptOssBiases(c Config, p string, mw *moeWeights, get func(string, int) ([]float32, error)) error {
	var err error
	if mw.routerBias, err = get(p+"mlp.router.bias", c.Experts); err != nil {
		return err
	}
	for e := range mw.experts {
		ew := &mw.experts[e]
		for _, b := range []struct {
			proj string
			n    int
			dst  *[]float32
		}{{"gate_proj", c.MoEIntermediate, &ew.gateBias}, {"up_proj", c.MoEIntermediate, &ew.upBias}, {"down_proj", c.Hidden, &ew.downBias}} {
			if *b.dst, err = get(expertBias(p, e, b.proj), b.n); err != nil {
				return err
			}
		}
	}
	return nil
}
