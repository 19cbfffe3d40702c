package engine

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/userfile"
)

// RopeScaling is the rope_scaling block of a Hugging Face config. Type is
// "default" (none), "linear" or "llama3".
type RopeScaling struct {
	Type                          string
	Factor                        float64
	LowFreqFactor                 float64
	HighFreqFactor                float64
	OriginalMaxPositionEmbeddings int
}

// Config is the architecture of a model the engine runs: the shape shared
// with the model catalog (models.Shape, so cfg.Hidden and the like read
// through it) plus the settings of config.json that only the engine needs.
type Config struct {
	models.Shape              // a dense models.Llama3 or models.Qwen3 shape; HeadDim defaults to Hidden/Heads
	RopeScaling  *RopeScaling // nil: unscaled
	BOSTokenID   int          // -1 if none
	EOSTokenIDs  []int        // end-of-sequence ids from the config
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

// ParseConfig parses a Hugging Face config.json for a Llama-3 or Qwen3
// (dense) model.
func ParseConfig(data []byte) (Config, error) {
	var h hfConfig
	if err := json.Unmarshal(data, &h); err != nil {
		return Config{}, fmt.Errorf("parse model config.json: %w", err)
	}
	var c Config
	switch f := models.Family(h.ModelType); f {
	case models.Llama3, models.Qwen3:
		c.Family = f
	default:
		return Config{}, fmt.Errorf("model_type %q is not supported by the local engine (supported: llama, qwen3)", h.ModelType)
	}
	if h.NumExperts > 0 {
		return Config{}, fmt.Errorf("mixture-of-experts models are not supported by the local engine")
	}
	if h.MLPBias {
		return Config{}, fmt.Errorf("mlp_bias is not supported by the local engine")
	}
	if h.UseSlidingWindow {
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
	c.KVHeads = h.NumKeyValueHeads
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	c.HeadDim = h.HeadDim
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
		case "linear", "llama3":
			c.RopeScaling = &RopeScaling{Type: typ, Factor: r.Factor, LowFreqFactor: r.LowFreqFactor,
				HighFreqFactor: r.HighFreqFactor, OriginalMaxPositionEmbeddings: r.OriginalMaxPositionEmbeddings}
		default:
			return Config{}, fmt.Errorf("rope scaling type %q is not supported (supported: default, linear, llama3)", typ)
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

// Bounds on a config's dimensions, each far above any released model, so
// that a hostile config.json cannot make the code that sizes tensors from
// it (ExpectedShapes, Params) allocate without end or overflow.
const (
	maxVocab   = 1 << 22
	maxWidth   = 1 << 20 // hidden_size, intermediate_size
	maxLayers  = 1 << 12
	maxHeads   = 1 << 12
	maxHeadDim = 1 << 12
)

// Validate checks that the dimensions are consistent and bounded.
func (c Config) Validate() error {
	switch {
	case c.Family != models.Llama3 && c.Family != models.Qwen3:
		return fmt.Errorf("model config: unsupported architecture %q", c.Family)
	case c.Experts > 0 || c.MLA != nil:
		return fmt.Errorf("model config: mixture-of-experts and latent-attention models are not supported by the local engine")
	case c.VocabSize <= 0 || c.Hidden <= 0 || c.Intermediate <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.HeadDim <= 0:
		return fmt.Errorf("model config: vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads and head_dim must be positive")
	case c.VocabSize > maxVocab || c.Hidden > maxWidth || c.Intermediate > maxWidth || c.Layers > maxLayers ||
		c.Heads > maxHeads || c.HeadDim > maxHeadDim:
		return fmt.Errorf("model config: vocab_size %d, hidden_size %d, intermediate_size %d, num_hidden_layers %d, num_attention_heads %d or head_dim %d passes the bounds (%d, %d, %d, %d, %d, %d): not a real model",
			c.VocabSize, c.Hidden, c.Intermediate, c.Layers, c.Heads, c.HeadDim, maxVocab, maxWidth, maxWidth, maxLayers, maxHeads, maxHeadDim)
	case c.KVHeads <= 0 || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("model config: num_attention_heads (%d) must be a multiple of num_key_value_heads (%d)", c.Heads, c.KVHeads)
	case c.HeadDim%2 != 0:
		return fmt.Errorf("model config: head_dim %d must be even for rotary embeddings", c.HeadDim)
	}
	if s := c.RopeScaling; s != nil {
		if s.Factor <= 0 {
			return fmt.Errorf("model config: rope_scaling factor must be positive")
		}
		if s.Type == "llama3" && (s.OriginalMaxPositionEmbeddings <= 0 || s.HighFreqFactor <= s.LowFreqFactor) {
			return fmt.Errorf("model config: llama3 rope_scaling needs original_max_position_embeddings > 0 and high_freq_factor > low_freq_factor")
		}
	}
	return nil
}

// Params returns the number of parameters implied by the config.
func (c Config) Params() int64 {
	h, q, kv := int64(c.Hidden), int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim)
	layer := h*q + 2*h*kv + q*h + 3*h*int64(c.Intermediate) + 2*h
	if c.Family == models.Qwen3 {
		layer += 2 * int64(c.HeadDim)
	}
	n := int64(c.Layers)*layer + int64(c.VocabSize)*h + h
	if !c.TieWordEmbeddings {
		n += int64(c.VocabSize) * h
	}
	return n
}

// HFConfigJSON renders c as a Hugging Face config.json (the fields
// ParseConfig reads), e.g. to write a tiny model out as a model directory.
func (c Config) HFConfigJSON() ([]byte, error) {
	arch := map[models.Family]string{models.Llama3: "LlamaForCausalLM", models.Qwen3: "Qwen3ForCausalLM"}[c.Family]
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
		if s.Type == "llama3" {
			r["low_freq_factor"] = s.LowFreqFactor
			r["high_freq_factor"] = s.HighFreqFactor
			r["original_max_position_embeddings"] = s.OriginalMaxPositionEmbeddings
		}
		m["rope_scaling"] = r
	}
	return json.MarshalIndent(m, "", "  ")
}
