package models

import "strings"

// Family is a model architecture family, spelled as the model_type of a
// Hugging Face config.json (and reported so by get_info).
type Family string

const (
	Llama3     Family = "llama"       // Llama 3.x
	Qwen3      Family = "qwen3"       // Qwen3 dense: Llama's layout plus per-head q_norm/k_norm
	Qwen3MoE   Family = "qwen3_moe"   // Qwen3 mixture of experts
	DeepSeekV3 Family = "deepseek_v3" // DeepSeek-V3 and models reusing it (Kimi K2)
	GptOss     Family = "gpt_oss"     // OpenAI gpt-oss
)

// namePrefixes decide the family of base models outside the table by their
// Hugging Face repo id. They cannot tell Qwen3's MoE models from its dense
// ones, which is enough for choosing a tokenizer or chat format.
var namePrefixes = []struct {
	prefix string
	family Family
}{
	{"meta-llama/Llama-3", Llama3},
	{"Qwen/Qwen3-", Qwen3},
	{"deepseek-ai/DeepSeek-V3", DeepSeekV3},
	{"openai/gpt-oss-", GptOss},
}

// FamilyOf returns the family of a base model: the table's entry when the
// model is in it (see Lookup), otherwise a guess from its repo id; ok is
// false when neither knows the model.
func FamilyOf(baseModel string) (f Family, ok bool) {
	if a, ok := Lookup(baseModel); ok {
		return a.Family, true
	}
	name, _, _ := strings.Cut(baseModel, ":")
	for _, p := range namePrefixes {
		if strings.HasPrefix(name, p.prefix) {
			return p.family, true
		}
	}
	return "", false
}

// IsTiny reports whether a base model is one of the built-in tiny models.
func IsTiny(baseModel string) bool { return strings.HasPrefix(baseModel, tinyPrefix) }
