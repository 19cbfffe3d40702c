package engine

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/tinkershell/tinker/lib/models"
)

// DeepSeek-V3 (deepseek_v3; Kimi K2's kimi_k2 is the same architecture),
// from transformers' modeling_deepseek_v3.py: multi-head latent attention
// (mla.go), and MLPs that are dense for the first first_k_dense_replace
// layers and otherwise routed experts plus always-on shared experts
// (deepseek_moe.go). The shared experts are a dense MLP of width
// n_shared_experts·moe_intermediate_size, held (and adapted) in the
// layer's dense gate/up/down slots, so they run through the dense MLP's
// code.

// DeepSeekRouting is DeepSeek-V3's router: sigmoid scores, the
// correction bias (a weight, mlp.gate.e_score_correction_bias) added for
// choosing only, the experts chosen within the TopKGroups groups (of
// Groups) whose two best scores sum highest, and the chosen scores
// (renormalised with norm_topk_prob) times ScalingFactor.
type DeepSeekRouting struct {
	Groups, TopKGroups int     // n_group, topk_group
	ScalingFactor      float64 // routed_scaling_factor
	// RopeInterleave: the rotary part of each head pairs neighbouring
	// elements (rope_interleave, true in every released config).
	RopeInterleave bool
}

// hfDeepSeek mirrors the config.json fields of the DeepSeek-V3 family.
type hfDeepSeek struct {
	NRoutedExperts      int             `json:"n_routed_experts"`
	NSharedExperts      int             `json:"n_shared_experts"`
	RoutedScalingFactor float64         `json:"routed_scaling_factor"`
	KVLoraRank          int             `json:"kv_lora_rank"`
	QLoraRank           *int            `json:"q_lora_rank"`
	QKRopeHeadDim       int             `json:"qk_rope_head_dim"`
	QKNopeHeadDim       int             `json:"qk_nope_head_dim"`
	VHeadDim            int             `json:"v_head_dim"`
	NGroup              int             `json:"n_group"`
	TopKGroup           int             `json:"topk_group"`
	FirstKDenseReplace  int             `json:"first_k_dense_replace"`
	MoELayerFreq        *int            `json:"moe_layer_freq"`
	NormTopKProb        *bool           `json:"norm_topk_prob"`
	ScoringFunc         string          `json:"scoring_func"`
	TopKMethod          string          `json:"topk_method"`
	RopeInterleave      *bool           `json:"rope_interleave"`
	AttentionBias       bool            `json:"attention_bias"`
	TextConfig          json.RawMessage `json:"text_config"`
}

// isDeepSeekType reports whether a config.json's model_type is of the
// DeepSeek-V3 architecture the engine runs.
func isDeepSeekType(t string) bool { return t == string(models.DeepSeekV3) || t == "kimi_k2" }

// parseDeepSeek fills c's DeepSeek-V3 fields from config.json (already
// parsed into h for the common fields). A field config.json leaves out
// takes DeepseekV3Config's default, as transformers reads it.
func parseDeepSeek(c *Config, h *hfConfig, data []byte) error {
	qlr := 1536
	d := hfDeepSeek{NRoutedExperts: 256, NSharedExperts: 1, RoutedScalingFactor: 2.5, KVLoraRank: 512, QLoraRank: &qlr,
		QKRopeHeadDim: 64, QKNopeHeadDim: 128, VHeadDim: 128, NGroup: 8, TopKGroup: 4, FirstKDenseReplace: 3}
	if err := json.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("parse model config.json: %w", err)
	}
	switch {
	case d.ScoringFunc != "" && d.ScoringFunc != "sigmoid":
		return fmt.Errorf("deepseek_v3 scoring_func %q is not supported (only sigmoid)", d.ScoringFunc)
	case d.TopKMethod != "" && d.TopKMethod != "noaux_tc":
		return fmt.Errorf("deepseek_v3 topk_method %q is not supported (only noaux_tc)", d.TopKMethod)
	case d.AttentionBias:
		return fmt.Errorf("deepseek_v3 with attention_bias is not supported by the local engine")
	case d.NRoutedExperts <= 0:
		return fmt.Errorf("model config: deepseek_v3 needs n_routed_experts > 0")
	}
	m := &models.MLA{KVLoraRank: d.KVLoraRank, QKNopeDim: d.QKNopeHeadDim, QKRopeDim: d.QKRopeHeadDim, VHeadDim: d.VHeadDim}
	if d.QLoraRank != nil {
		m.QLoraRank = *d.QLoraRank
	}
	c.MLA = m
	c.HeadDim, c.KVHeads = m.QKNopeDim+m.QKRopeDim, h.NumAttentionHeads
	c.Experts, c.ExpertsPerToken, c.MoEIntermediate = d.NRoutedExperts, h.NumExpertsPerTok, h.MoEIntermediateSize
	c.SharedExperts, c.FirstDenseLayers = d.NSharedExperts, d.FirstKDenseReplace
	c.NormTopKProb = d.NormTopKProb == nil || *d.NormTopKProb
	c.Routing = &DeepSeekRouting{Groups: max(d.NGroup, 1), TopKGroups: max(d.TopKGroup, 1),
		ScalingFactor: d.RoutedScalingFactor, RopeInterleave: d.RopeInterleave == nil || *d.RopeInterleave}
	if c.Routing.ScalingFactor == 0 {
		c.Routing.ScalingFactor = 1
	}
	// moe_layer_freq (DeepSeek's own code: layer i has experts when i %
	// freq == 0, past the dense ones; 1 in every released config).
	if f := d.MoELayerFreq; f != nil && *f > 1 && h.NumHiddenLayers <= maxLayers {
		for i := range h.NumHiddenLayers {
			if i%*f != 0 {
				c.MLPOnlyLayers = append(c.MLPOnlyLayers, i)
			}
		}
	}
	return nil
}

// validateDeepSeek checks the DeepSeek-V3 fields.
func (c Config) validateDeepSeek() error {
	m, r := c.MLA, c.Routing
	if c.Family != models.DeepSeekV3 {
		if m != nil || r != nil || c.SharedExperts > 0 || c.FirstDenseLayers > 0 {
			return fmt.Errorf("model config: latent attention and shared experts are supported for deepseek_v3 only")
		}
		return nil
	}
	switch {
	case m == nil || r == nil:
		return fmt.Errorf("model config: deepseek_v3 needs its latent attention and routing settings")
	case m.KVLoraRank <= 0 || m.QKNopeDim <= 0 || m.QKRopeDim <= 0 || m.VHeadDim <= 0 || m.QLoraRank < 0:
		return fmt.Errorf("model config: kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim must be positive")
	case m.KVLoraRank > maxWidth || m.QLoraRank > maxWidth || m.VHeadDim > maxHeadDim:
		return fmt.Errorf("model config: kv_lora_rank %d, q_lora_rank %d or v_head_dim %d passes the bounds (%d, %d, %d): not a real model",
			m.KVLoraRank, m.QLoraRank, m.VHeadDim, maxWidth, maxWidth, maxHeadDim)
	case m.QKRopeDim%2 != 0 || c.HeadDim != m.QKNopeDim+m.QKRopeDim || m.VHeadDim > c.HeadDim:
		return fmt.Errorf("model config: qk_rope_head_dim must be even and v_head_dim at most qk_nope_head_dim + qk_rope_head_dim")
	case c.KVHeads != c.Heads:
		return fmt.Errorf("model config: deepseek_v3 needs num_key_value_heads = num_attention_heads")
	case c.Experts%r.Groups != 0 || r.TopKGroups > r.Groups || (r.Groups > 1 && c.Experts/r.Groups < 2):
		return fmt.Errorf("model config: n_routed_experts (%d) must split into n_group (%d) groups of at least 2, and topk_group (%d) be at most n_group",
			c.Experts, r.Groups, r.TopKGroups)
	case r.ExpertsReachable(c) < c.ExpertsPerToken:
		return fmt.Errorf("model config: topk_group (%d) groups hold fewer than num_experts_per_tok (%d) experts", r.TopKGroups, c.ExpertsPerToken)
	case c.SharedExperts < 0 || c.SharedExperts*c.MoEIntermediate > max(c.Intermediate, 0):
		return fmt.Errorf("model config: n_shared_experts·moe_intermediate_size (%d·%d) must be at most intermediate_size (%d)",
			c.SharedExperts, c.MoEIntermediate, c.Intermediate)
	}
	return nil
}

// ExpertsReachable is how many experts the chosen groups hold.
func (r *DeepSeekRouting) ExpertsReachable(c Config) int {
	return r.TopKGroups * (c.Experts / r.Groups)
}

// sharedWidth is the width of a DeepSeek MoE layer's shared experts.
func (c Config) sharedWidth() int { return c.SharedExperts * c.MoEIntermediate }

// mlpWidth is the width of layer li's dense MLP: the dense layers', or a
// DeepSeek MoE layer's shared experts' (0: none).
func (c Config) mlpWidth(li int) int {
	if !c.IsMoELayer(li) {
		return c.Intermediate
	}
	return c.sharedWidth()
}

// deepseekJSON adds the DeepSeek-V3 fields to a config.json being written.
func deepseekJSON(c Config, m map[string]any) {
	delete(m, "head_dim") // transformers derives it (qk_rope_head_dim)
	ml, r := c.MLA, c.Routing
	var qlr any
	if ml.QLoraRank > 0 {
		qlr = ml.QLoraRank
	}
	for k, v := range map[string]any{"q_lora_rank": qlr, "kv_lora_rank": ml.KVLoraRank, "qk_nope_head_dim": ml.QKNopeDim,
		"qk_rope_head_dim": ml.QKRopeDim, "v_head_dim": ml.VHeadDim, "n_routed_experts": c.Experts,
		"num_experts_per_tok": c.ExpertsPerToken, "moe_intermediate_size": c.MoEIntermediate, "n_shared_experts": c.SharedExperts,
		"first_k_dense_replace": c.FirstDenseLayers, "moe_layer_freq": 1, "n_group": r.Groups, "topk_group": r.TopKGroups,
		"routed_scaling_factor": r.ScalingFactor, "norm_topk_prob": c.NormTopKProb, "scoring_func": "sigmoid",
		"topk_method": "noaux_tc", "rope_interleave": r.RopeInterleave} {
		m[k] = v
	}
	m["architectures"] = []string{"DeepseekV3ForCausalLM"}
	if s := c.RopeScaling; s != nil && s.Type == "yarn" {
		m["rope_scaling"].(map[string]any)["mscale"] = s.MScale
		m["rope_scaling"].(map[string]any)["mscale_all_dim"] = s.MScaleAllDim
	}
}

// deepseekParams counts a DeepSeek-V3 model's parameters.
func (c Config) deepseekParams() int64 {
	m, h := c.MLA, int64(c.Hidden)
	heads, qk := int64(c.Heads), int64(c.HeadDim)
	attn := int64(m.KVLoraRank+m.QKRopeDim)*h + int64(m.KVLoraRank) + int64(m.KVLoraRank)*heads*int64(m.QKNopeDim+m.VHeadDim) +
		heads*int64(m.VHeadDim)*h
	if m.QLoraRank > 0 {
		attn += int64(m.QLoraRank)*h + int64(m.QLoraRank) + int64(m.QLoraRank)*heads*qk
	} else {
		attn += h * heads * qk
	}
	n := int64(c.Layers)*(attn+2*h) + int64(c.VocabSize)*h + h
	for li := range c.Layers {
		n += 3 * h * int64(c.mlpWidth(li))
		if c.IsMoELayer(li) {
			n += int64(c.Experts)*(h+1) + int64(c.Experts)*3*h*int64(c.MoEIntermediate)
		}
	}
	if !c.TieWordEmbeddings {
		n += int64(c.VocabSize) * h
	}
	return n
}

// yarnMScale is YaRN's attention temperature 0.1·m·ln(factor) + 1 (1 for
// factors up to 1).
func yarnMScale(factor, m float64) float64 {
	if factor <= 1 {
		return 1
	}
	return 0.1*m*math.Log(factor) + 1
}

// mlaScoreScale is what DeepSeek multiplies the softmax scale
// 1/√qk_head_dim by: mscale(factor, mscale_all_dim)² under YaRN with
// mscale_all_dim set, else 1. The engine folds it into the queries.
func (c Config) mlaScoreScale() float64 {
	s := c.RopeScaling
	if s == nil || s.MScaleAllDim == 0 {
		return 1
	}
	ms := yarnMScale(s.Factor, s.MScaleAllDim)
	return ms * ms
}

// ropeConfig is the config the rotary tables are computed from: for
// latent attention the rotary part of a head (qk_rope_head_dim), as
// transformers sets head_dim for it.
func (c Config) ropeConfig() Config {
	if c.MLA != nil {
		c.HeadDim = c.MLA.QKRopeDim
	}
	return c
}
