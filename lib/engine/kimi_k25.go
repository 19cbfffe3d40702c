package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// Kimi K2.5 and K2.6 (model_type kimi_k25) wrap Kimi K2's DeepseekV3 text
// model in a vision model: config.json holds the text model's settings in
// text_config, and the weights keep the text model under language_model.
// (language_model.model.layers.*, language_model.lm_head.weight) beside
// vision_tower.* and mm_projector.* (vLLM's kimi_k25.py load_weights,
// tinker-cookbook's _merge_kimi_k25.py). The engine runs the text model:
// it reads text_config, drops the prefix and skips the vision tensors.

// kimiK25Type is the wrapper's model_type; kimiTextPrefix its text prefix.
const (
	kimiK25Type    = "kimi_k25"
	kimiTextPrefix = "language_model."
)

// parseKimiK25 parses a kimi_k25 config.json as its text model. Token ids
// and tie_word_embeddings that only the wrapper states are carried into
// the text model's settings.
func parseKimiK25(data []byte) (Config, error) {
	var outer, text map[string]json.RawMessage
	if err := json.Unmarshal(data, &outer); err != nil {
		return Config{}, fmt.Errorf("parse model config.json: %w", err)
	}
	if err := json.Unmarshal(outer["text_config"], &text); err != nil || text == nil {
		return Config{}, fmt.Errorf("kimi_k25 config.json has no text_config object: the local engine runs Kimi K2.5/K2.6's text model from it")
	}
	var mt string
	if raw, ok := text["model_type"]; ok && json.Unmarshal(raw, &mt) != nil {
		return Config{}, fmt.Errorf("kimi_k25 text_config: model_type is not a string")
	}
	switch {
	case mt == "":
		text["model_type"] = json.RawMessage(`"kimi_k2"`)
	case !isDeepSeekType(mt):
		return Config{}, fmt.Errorf("kimi_k25 text_config has model_type %q: the local engine runs it only around a DeepSeek-V3 text model (deepseek_v3, kimi_k2)", mt)
	}
	for _, k := range []string{"bos_token_id", "eos_token_id", "tie_word_embeddings"} {
		if _, ok := text[k]; !ok && outer[k] != nil {
			text[k] = outer[k]
		}
	}
	b, err := json.Marshal(text)
	if err != nil {
		return Config{}, fmt.Errorf("kimi_k25 text_config: %w", err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("kimi_k25 text_config: %w", err)
	}
	c.TextPrefix = kimiTextPrefix
	return c, nil
}

// textTensors is the text model's tensors of a wrapped checkpoint, named
// as the text model names them, without the rest (the vision tower and
// projector); a plain checkpoint's (prefix "") are returned as they are.
// The tensors' data is shared, not copied.
func textTensors(ts []safetensors.Tensor, prefix string) []safetensors.Tensor {
	if prefix == "" {
		return ts
	}
	var kept []safetensors.Tensor
	for _, t := range ts {
		if name, ok := strings.CutPrefix(t.Name, prefix); ok {
			t.Name = name
			kept = append(kept, t)
		}
	}
	return kept
}
