package engine

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/userfile"
)

// RopeScaling is the rope_scaling block of a Hugging Face config. Type is
// "default" (none), "linear", "llama3" or "yarn".
type RopeScaling struct {
	Type                          string
	Factor                        float64
	LowFreqFactor                 float64
	HighFreqFactor                float64
	OriginalMaxPositionEmbeddings int
	BetaFast, BetaSlow            float64 // yarn; 0 means 32 and 1
	Truncate                      *bool   // yarn: round the ramp's ends (nil: true)
	AttentionFactor               float64 // yarn: multiplies cos and sin; 0 means 0.1·ln(factor) + 1
	MScale, MScaleAllDim          float64 // yarn, DeepSeek-V3: mscale and mscale_all_dim (deepseek.go)
}

// Config is the architecture of a model the engine runs: the shape shared
// with the model catalog (models.Shape, so cfg.Hidden and the like read
// through it) plus the settings of config.json that only the engine needs.
type Config struct {
	models.Shape              // a models.Llama3, models.Qwen3 or models.Qwen3MoE shape; HeadDim defaults to Hidden/Heads
	RopeScaling  *RopeScaling // nil: unscaled
	NormTopKProb bool         // Qwen3-MoE norm_topk_prob: the top-k routing weights are renormalised to sum to 1
	// GPT-OSS: sliding_window and layer_types ("sliding_attention" or
	// "full_attention" per layer), swiglu_limit (gptoss.go).
	SlidingWindow int
	LayerTypes    []string
	SwigluLimit   float64
	Routing       *DeepSeekRouting // DeepSeek-V3's router (deepseek.go); nil for the other families
	BOSTokenID    int              // -1 if none
	EOSTokenIDs   []int            // end-of-sequence ids from the config
	// TextPrefix is where a wrapped checkpoint keeps the text model's
	// tensors ("language_model." for Kimi K2.5/K2.6, kimi_k25.go); "" for
	// the plain ones.
	TextPrefix string
}

// hfConfig mirrors the fields of config.json that the engine reads.
type hfConfig struct {
	ModelType             string          `json:"model_type"`
	Architectures         []string        `json:"architectures"`
	VocabSize             int             `json:"vocab_size"`
	HiddenSize            int             `json:"hidden_size"`
	IntermediateSize      int             `json:"intermediate_size"`
	NumHiddenLayers       int             `json:"num_hidden_layers"`
	NumAttentionHeads     int             `json:"num_attention_heads"`
	NumKeyValueHeads      int             `json:"num_key_value_heads"`
	HeadDim               int             `json:"head_dim"`
	RMSNormEps            float64         `json:"rms_norm_eps"`
	RopeTheta             float64         `json:"rope_theta"`
	RopeScaling           json.RawMessage `json:"rope_scaling"`
	RopeParameters        json.RawMessage `json:"rope_parameters"` // transformers v5 spelling
	TieWordEmbeddings     *bool           `json:"tie_word_embeddings"`
	MaxPositionEmbeddings int             `json:"max_position_embeddings"`
	HiddenAct             string          `json:"hidden_act"`
	BOSTokenID            json.RawMessage `json:"bos_token_id"`
	EOSTokenID            json.RawMessage `json:"eos_token_id"`
	NumExperts            int             `json:"num_experts"`
	NumLocalExperts       int             `json:"num_local_experts"` // transformers v5's name for num_experts
	NumExpertsPerTok      int             `json:"num_experts_per_tok"`
	MoEIntermediateSize   int             `json:"moe_intermediate_size"`
	NormTopKProb          bool            `json:"norm_topk_prob"`
	DecoderSparseStep     int             `json:"decoder_sparse_step"`
	MLPOnlyLayers         []int           `json:"mlp_only_layers"`
	ExpertsPerToken       int             `json:"experts_per_token"` // gpt-oss's own name for num_experts_per_tok
	SlidingWindow         int             `json:"sliding_window"`
	LayerTypes            []string        `json:"layer_types"`
	SwigluLimit           float64         `json:"swiglu_limit"`
	MLPBias               bool            `json:"mlp_bias"`
	UseSlidingWindow      bool            `json:"use_sliding_window"`
}

type hfRope struct {
	RopeType                      string  `json:"rope_type"`
	Type                          string  `json:"type"`
	RopeTheta                     float64 `json:"rope_theta"`
	Factor                        float64 `json:"factor"`
	LowFreqFactor                 float64 `json:"low_freq_factor"`
	HighFreqFactor                float64 `json:"high_freq_factor"`
	OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings"`
	BetaFast                      float64 `json:"beta_fast"`
	BetaSlow                      float64 `json:"beta_slow"`
	Truncate                      *bool   `json:"truncate"`
	AttentionFactor               float64 `json:"attention_factor"`
	MScale                        float64 `json:"mscale"`
	MScaleAllDim                  float64 `json:"mscale_all_dim"`
}

// maxConfigBytes bounds config.json (a link to /dev/zero must not fill memory).
const maxConfigBytes = 16 << 20

// ReadConfig parses dir/config.json.
func ReadConfig(dir string) (Config, error) {
	b, err := userfile.ReadFile(filepath.Join(dir, "config.json"), maxConfigBytes)
	if err != nil {
		return Config{}, fmt.Errorf("read model config: %w", err)
	}
	return ParseConfig(b)
}

// ParseConfig parses a Hugging Face config.json for a Llama-3, Qwen3,
// Qwen3-MoE, GPT-OSS or DeepSeek-V3 model, or the text model of a Kimi
// K2.5/K2.6 wrapper (kimi_k25.go).
func ParseConfig(data []byte) (Config, error) {
	var h hfConfig
	if err := json.Unmarshal(data, &h); err != nil {
		return Config{}, fmt.Errorf("parse model config.json: %w", err)
	}
	if h.ModelType == kimiK25Type {
		return parseKimiK25(data)
	}
	var c Config
	switch f := models.Family(h.ModelType); {
	case f == models.Llama3 || f == models.Qwen3 || f == models.Qwen3MoE || f == models.GptOss:
		c.Family = f
	case isDeepSeekType(h.ModelType):
		c.Family = models.DeepSeekV3
	default:
		return Config{}, fmt.Errorf("model_type %q is not supported by the local engine (supported: llama, qwen3, qwen3_moe, gpt_oss, deepseek_v3, kimi_k2, kimi_k25)", h.ModelType)
	}
	if c.Family == models.GptOss {
		parseGptOss(&c, &h)
	}
	if c.Family == models.DeepSeekV3 {
		if err := parseDeepSeek(&c, &h, data); err != nil {
			return Config{}, err
		}
	}
	if !c.moeFamily() && max(h.NumExperts, h.NumLocalExperts) > 0 {
		return Config{}, fmt.Errorf("model_type %q with experts is not supported by the local engine", h.ModelType)
	}
	if c.Family == models.Qwen3MoE {
		c.Experts, c.ExpertsPerToken, c.MoEIntermediate = max(h.NumExperts, h.NumLocalExperts), h.NumExpertsPerTok, h.MoEIntermediateSize
		c.NormTopKProb, c.DecoderSparseStep = h.NormTopKProb, h.DecoderSparseStep
		if len(h.MLPOnlyLayers) > 0 {
			c.MLPOnlyLayers = h.MLPOnlyLayers
		}
	}
	if h.MLPBias {
		return Config{}, fmt.Errorf("mlp_bias is not supported by the local engine")
	}
	if h.UseSlidingWindow && c.Family != models.GptOss {
		return Config{}, fmt.Errorf("sliding-window attention is not supported by the local engine")
	}
	if h.HiddenAct != "" && h.HiddenAct != "silu" {
		return Config{}, fmt.Errorf("hidden_act %q is not supported (only silu)", h.HiddenAct)
	}
	c.VocabSize = h.VocabSize
	c.Hidden = h.HiddenSize
	c.Intermediate = h.IntermediateSize
	c.Layers = h.NumHiddenLayers
	c.Heads = h.NumAttentionHeads
	if c.MLA == nil {
		c.KVHeads, c.HeadDim = h.NumKeyValueHeads, h.HeadDim
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.HeadDim == 0 && c.Heads > 0 {
		c.HeadDim = c.Hidden / c.Heads
	}
	c.RMSNormEps = h.RMSNormEps
	if c.RMSNormEps == 0 {
		c.RMSNormEps = 1e-6
	}
	c.RopeTheta = h.RopeTheta
	c.MaxPositionEmbeddings = h.MaxPositionEmbeddings
	// Llama ties only when asked; Qwen3's default in transformers is also
	// false but the small checkpoints set it explicitly.
	if h.TieWordEmbeddings != nil {
		c.TieWordEmbeddings = *h.TieWordEmbeddings
	}
	for _, raw := range []json.RawMessage{h.RopeScaling, h.RopeParameters} {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var r hfRope
		if err := json.Unmarshal(raw, &r); err != nil {
			return Config{}, fmt.Errorf("parse rope_scaling: %w", err)
		}
		if r.RopeTheta != 0 && c.RopeTheta == 0 {
			c.RopeTheta = r.RopeTheta
		}
		typ := r.RopeType
		if typ == "" {
			typ = r.Type
		}
		switch typ {
		case "", "default":
		case "yarn":
			if (r.MScale != 0 || r.MScaleAllDim != 0) && c.Family != models.DeepSeekV3 {
				return Config{}, fmt.Errorf("yarn rope_scaling with mscale/mscale_all_dim (DeepSeek's) is not supported")
			}
			fallthrough
		case "linear", "llama3":
			c.RopeScaling = &RopeScaling{Type: typ, Factor: r.Factor, LowFreqFactor: r.LowFreqFactor,
				HighFreqFactor: r.HighFreqFactor, OriginalMaxPositionEmbeddings: r.OriginalMaxPositionEmbeddings,
				BetaFast: r.BetaFast, BetaSlow: r.BetaSlow, Truncate: r.Truncate, AttentionFactor: r.AttentionFactor,
				MScale: r.MScale, MScaleAllDim: r.MScaleAllDim}
		default:
			return Config{}, fmt.Errorf("rope scaling type %q is not supported (supported: default, linear, llama3, yarn)", typ)
		}
	}
	if c.RopeTheta == 0 {
		c.RopeTheta = 10000
	}
	var err error
	if c.BOSTokenID, err = firstTokenID(h.BOSTokenID); err != nil {
		return Config{}, fmt.Errorf("parse bos_token_id: %w", err)
	}
	if c.EOSTokenIDs, err = tokenIDs(h.EOSTokenID); err != nil {
		return Config{}, fmt.Errorf("parse eos_token_id: %w", err)
	}
	return c, c.Validate()
}

func tokenIDs(raw json.RawMessage) ([]int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one int
	if json.Unmarshal(raw, &one) == nil {
		return []int{one}, nil
	}
	var many []int
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, err
	}
	return many, nil
}

func firstTokenID(raw json.RawMessage) (int, error) {
	ids, err := tokenIDs(raw)
	if err != nil || len(ids) == 0 {
		return -1, err
	}
	return ids[0], nil
}

// maxExperts bounds num_experts before anything is allocated per expert
// (the largest released models have a few hundred).
const maxExperts = 1 << 14

// Bounds on a config's dimensions, each far above any released model, so
// that a hostile config.json cannot make the code that sizes tensors from
// it (ExpectedShapes, Params) allocate without end or overflow.
const (
	maxVocab   = 1 << 22
	maxWidth   = 1 << 20 // hidden_size, intermediate_size, moe_intermediate_size
	maxLayers  = 1 << 12
	maxHeads   = 1 << 12
	maxHeadDim = 1 << 12
)

// Validate checks that the dimensions are consistent and bounded.
func (c Config) Validate() error {
	switch {
	case c.Family != models.Llama3 && c.Family != models.Qwen3 && !c.moeFamily():
		return fmt.Errorf("model config: unsupported architecture %q", c.Family)
	case (c.Experts > 0) != c.moeFamily():
		return fmt.Errorf("model config: num_experts must be positive for qwen3_moe, gpt_oss and deepseek_v3 and absent otherwise")
	case c.VocabSize <= 0 || c.Hidden <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.HeadDim <= 0:
		return fmt.Errorf("model config: vocab_size, hidden_size, num_hidden_layers, num_attention_heads and head_dim must be positive")
	case c.VocabSize > maxVocab || c.Hidden > maxWidth || c.Intermediate > maxWidth || c.MoEIntermediate > maxWidth ||
		c.Layers > maxLayers || c.Heads > maxHeads || c.HeadDim > maxHeadDim:
		return fmt.Errorf("model config: vocab_size %d, hidden_size %d, intermediate_size %d, num_hidden_layers %d, num_attention_heads %d or head_dim %d passes the bounds (%d, %d, %d, %d, %d, %d): not a real model",
			c.VocabSize, c.Hidden, c.Intermediate, c.Layers, c.Heads, c.HeadDim, maxVocab, maxWidth, maxWidth, maxLayers, maxHeads, maxHeadDim)
	case c.denseLayers() > 0 && c.Intermediate <= 0:
		return fmt.Errorf("model config: intermediate_size must be positive")
	case c.Experts > maxExperts:
		return fmt.Errorf("model config: num_experts %d is more than the %d the local engine takes", c.Experts, maxExperts)
	case c.Experts > 0 && (c.MoEIntermediate <= 0 || c.ExpertsPerToken <= 0 || c.ExpertsPerToken > c.Experts):
		return fmt.Errorf("model config: moe_intermediate_size must be positive and num_experts_per_tok between 1 and num_experts (%d)", c.Experts)
	case c.KVHeads <= 0 || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("model config: num_attention_heads (%d) must be a multiple of num_key_value_heads (%d)", c.Heads, c.KVHeads)
	case c.HeadDim%2 != 0:
		return fmt.Errorf("model config: head_dim %d must be even for rotary embeddings", c.HeadDim)
	}
	if err := c.validateGptOss(); err != nil {
		return err
	}
	if err := c.validateDeepSeek(); err != nil {
		return err
	}
	if s := c.RopeScaling; s != nil {
		if s.Factor <= 0 {
			return fmt.Errorf("model config: rope_scaling factor must be positive")
		}
		if s.Type == "yarn" && s.OriginalMaxPositionEmbeddings <= 0 {
			return fmt.Errorf("model config: yarn rope_scaling needs original_max_position_embeddings > 0")
		}
		if s.Type == "llama3" && (s.OriginalMaxPositionEmbeddings <= 0 || s.HighFreqFactor <= s.LowFreqFactor) {
			return fmt.Errorf("model config: llama3 rope_scaling needs original_max_position_embeddings > 0 and high_freq_factor > low_freq_factor")
		}
	}
	return nil
}

// Params returns the number of parameters implied by the config.
func (c Config) Params() int64 {
	if c.MLA != nil {
		return c.deepseekParams()
	}
	h, q, kv := int64(c.Hidden), int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim)
	layer := h*q + 2*h*kv + q*h + 2*h
	if c.hasQKNorm() {
		layer += 2 * int64(c.HeadDim)
	}
	if c.Family == models.GptOss { // attention biases and sinks; router and expert biases
		layer += q + 2*kv + h + int64(c.Heads) + int64(c.Experts)*(1+2*int64(c.MoEIntermediate)+h)
	}
	n := int64(c.Layers)*layer + int64(c.VocabSize)*h + h
	n += int64(c.denseLayers()) * 3 * h * int64(c.Intermediate)
	n += int64(c.Layers-c.denseLayers()) * (int64(c.Experts)*h + int64(c.Experts)*3*h*int64(c.MoEIntermediate))
	if !c.TieWordEmbeddings {
		n += int64(c.VocabSize) * h
	}
	return n
}

// HFConfigJSON renders c as a Hugging Face config.json (the fields
// ParseConfig reads), e.g. to write a tiny model out as a model directory.
func (c Config) HFConfigJSON() ([]byte, error) {
	arch := map[models.Family]string{models.Llama3: "LlamaForCausalLM", models.Qwen3: "Qwen3ForCausalLM",
		models.Qwen3MoE: "Qwen3MoeForCausalLM", models.GptOss: "GptOssForCausalLM", models.DeepSeekV3: "DeepseekV3ForCausalLM"}[c.Family]
	m := map[string]any{
		"architectures":           []string{arch},
		"model_type":              string(c.Family),
		"vocab_size":              c.VocabSize,
		"hidden_size":             c.Hidden,
		"intermediate_size":       c.Intermediate,
		"num_hidden_layers":       c.Layers,
		"num_attention_heads":     c.Heads,
		"num_key_value_heads":     c.KVHeads,
		"head_dim":                c.HeadDim,
		"rms_norm_eps":            c.RMSNormEps,
		"rope_theta":              c.RopeTheta,
		"tie_word_embeddings":     c.TieWordEmbeddings,
		"max_position_embeddings": c.MaxPositionEmbeddings,
		"hidden_act":              "silu",
		"attention_bias":          false,
		"torch_dtype":             "float32",
		"rope_scaling":            nil,
	}
	if c.Family == models.GptOss {
		gptOssJSON(c, m)
	} else if c.Experts > 0 && c.MLA == nil {
		m["num_experts"], m["num_experts_per_tok"], m["moe_intermediate_size"] = c.Experts, c.ExpertsPerToken, c.MoEIntermediate
		m["norm_topk_prob"] = c.NormTopKProb
		if c.DecoderSparseStep > 0 {
			m["decoder_sparse_step"] = c.DecoderSparseStep
		}
		if len(c.MLPOnlyLayers) > 0 {
			m["mlp_only_layers"] = c.MLPOnlyLayers
		}
	}
	if c.BOSTokenID >= 0 {
		m["bos_token_id"] = c.BOSTokenID
	}
	if len(c.EOSTokenIDs) == 1 {
		m["eos_token_id"] = c.EOSTokenIDs[0]
	} else if len(c.EOSTokenIDs) > 1 {
		m["eos_token_id"] = c.EOSTokenIDs
	}
	if s := c.RopeScaling; s != nil {
		r := map[string]any{"rope_type": s.Type, "factor": s.Factor}
		if s.Type == "yarn" {
			r["original_max_position_embeddings"], r["beta_fast"], r["beta_slow"] = s.OriginalMaxPositionEmbeddings, s.BetaFast, s.BetaSlow
			if s.AttentionFactor != 0 {
				r["attention_factor"] = s.AttentionFactor
			}
			if s.Truncate != nil {
				r["truncate"] = *s.Truncate
			}
		}
		if s.Type == "llama3" {
			r["low_freq_factor"] = s.LowFreqFactor
			r["high_freq_factor"] = s.HighFreqFactor
			r["original_max_position_embeddings"] = s.OriginalMaxPositionEmbeddings
		}
		m["rope_scaling"] = r
	}
	if c.MLA != nil {
		deepseekJSON(c, m)
	}
	return json.MarshalIndent(m, "", "  ")
}

// moeFamily reports whether the family routes tokens to experts.
func (c Config) moeFamily() bool {
	return c.Family == models.Qwen3MoE || c.Family == models.GptOss || c.Family == models.DeepSeekV3
}

// hasQKNorm reports whether attention normalises each query and key head
// (Qwen3's q_norm and k_norm).
func (c Config) hasQKNorm() bool { return c.Family == models.Qwen3 || c.Family == models.Qwen3MoE }

// denseLayers counts the layers with a dense MLP.
func (c Config) denseLayers() int {
	n := 0
	for i := range c.Layers {
		if !c.IsMoELayer(i) {
			n++
		}
	}
	return n
}
