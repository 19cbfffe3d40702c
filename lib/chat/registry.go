package chat

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tinkershell/tinker/lib/lazy"
	"github.com/tinkershell/tinker/lib/models"
)

// formats maps each cookbook renderer name to its format. The tables of
// this file are made on first use: every tinker command links them, few
// render a conversation.
var formats = lazy.Value[map[string]func() format]{New: func() map[string]func() format {
	return map[string]func() format{
		"role_colon":                        func() format { return roleColon{} },
		"llama3":                            func() format { return llama3{} },
		"qwen3":                             func() format { return qwen3{frames: true} },
		"qwen3_disable_thinking":            func() format { return qwen3Off{qwen3{frames: true}} },
		"qwen3_instruct":                    func() format { return qwen3{instruct: true} },
		"qwen3_vl":                          func() format { return qwenVL{} },
		"qwen3_vl_instruct":                 func() format { return qwenVL{} },
		"qwen3_5":                           func() format { return qwenVL{v: 35, gen: "<think>\n"} },
		"qwen3_5_disable_thinking":          func() format { return qwenVL{v: 35, gen: qwenEmptyThink, off: true} },
		"qwen3_8_xhigh_reasoning":           func() format { return qwenVL{v: 38, gen: "<think>\n", effort: "xhigh"} },
		"qwen3_8_medium_reasoning":          func() format { return qwenVL{v: 38, gen: "<think>\n", effort: "medium"} },
		"qwen3_8_low_reasoning":             func() format { return qwenVL{v: 38, gen: "<think>\n", effort: "low"} },
		"qwen3_8_disable_thinking":          func() format { return qwenVL{v: 38, gen: qwenEmptyThink, off: true} },
		"nemotron3":                         func() format { return nemotron{} },
		"nemotron3_low_thinking":            func() format { return nemotron{effort: "low"} },
		"nemotron3_disable_thinking":        func() format { return nemotron{off: true} },
		"nemotron3_preserve_thinking":       func() format { return nemotron{preserve: true} },
		"nemotron3_ultra":                   func() format { return nemotron{ultra: true} },
		"nemotron3_ultra_disable_thinking":  func() format { return nemotron{ultra: true, off: true} },
		"nemotron3_ultra_medium_thinking":   func() format { return nemotron{ultra: true, effort: "efficient"} },
		"nemotron3_ultra_preserve_thinking": func() format { return nemotron{ultra: true, preserve: true} },
		"kimi_k2":                           func() format { return kimi{} },
		"kimi_k25":                          func() format { return kimi{k25: true, think: "<think>"} },
		"kimi_k25_disable_thinking":         func() format { return kimi{k25: true, think: "<think></think>"} },
		"kimi_k26":                          func() format { return kimi{k25: true, think: "<think>"} },
		"kimi_k26_disable_thinking":         func() format { return kimi{k25: true, think: "<think></think>"} },
		"kimi_k26_preserve_thinking":        func() format { return kimi{k25: true, think: "<think>", preserve: true} },
		"deepseekv3":                        func() format { return deepseekOff{} },
		"deepseekv3_disable_thinking":       func() format { return deepseekOff{} },
		"deepseekv3_thinking":               func() format { return deepseekThinking{} },
		"gpt_oss_no_sysprompt":              func() format { return &GptOss{} },
		"gpt_oss_low_reasoning":             func() format { return &GptOss{System: true, ReasoningEffort: "low"} },
		"gpt_oss_medium_reasoning":          func() format { return &GptOss{System: true, ReasoningEffort: "medium"} },
		"gpt_oss_high_reasoning":            func() format { return &GptOss{System: true, ReasoningEffort: "high"} },
	}
}}

// aliases are tinker's earlier names, kept working.
var aliases = lazy.Value[map[string]string]{New: func() map[string]string {
	return map[string]string{
		"gpt_oss":               "gpt_oss_medium_reasoning",
		"deepseekv3_1":          "deepseekv3",
		"deepseekv3_1_thinking": "deepseekv3_thinking",
	}
}}

// unsupported are cookbook renderers tinker does not render, with why.
var unsupported = lazy.Value[map[string]string]{New: func() map[string]string {
	return map[string]string{
		"tml_v0": "tml_v0 (Inkling) is rendered by the external tml_renderers package, whose format the cookbook does not spell out, and tinker cannot load Inkling's tokenizer",
	}
}}

func lookup(name string) (string, func() format, bool) {
	if a, ok := aliases.Get()[name]; ok {
		name = a
	}
	f, ok := formats.Get()[name]
	return name, f, ok
}

// Names lists the renderers New accepts: the cookbook's names and
// tinker's aliases.
func Names() []string {
	var out []string
	for n := range formats.Get() {
		out = append(out, n)
	}
	for n := range aliases.Get() {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Aliases maps each of tinker's older renderer names to the cookbook name
// it stands for.
func Aliases() map[string]string {
	out := map[string]string{}
	for k, v := range aliases.Get() {
		out[k] = v
	}
	return out
}

// recommended is the cookbook's model table (model_info.py): the first
// recommended renderer of each model it lists.
var recommended = lazy.Value[map[string]string]{New: func() map[string]string {
	return map[string]string{
		"meta-llama/Llama-3.1-8B-Instruct":                  "llama3",
		"meta-llama/Llama-3.3-70B-Instruct":                 "llama3",
		"meta-llama/Llama-3.2-1B":                           "role_colon",
		"meta-llama/Llama-3.2-3B":                           "role_colon",
		"meta-llama/Llama-3.1-8B":                           "role_colon",
		"meta-llama/Llama-3.1-70B":                          "role_colon",
		"Qwen/Qwen3-VL-30B-A3B-Instruct":                    "qwen3_vl_instruct",
		"Qwen/Qwen3-VL-235B-A22B-Instruct":                  "qwen3_vl_instruct",
		"Qwen/Qwen3-8B-Base":                                "role_colon",
		"Qwen/Qwen3-30B-A3B-Base":                           "role_colon",
		"Qwen/Qwen3-8B":                                     "qwen3",
		"Qwen/Qwen3-32B":                                    "qwen3",
		"Qwen/Qwen3-30B-A3B":                                "qwen3",
		"Qwen/Qwen3-4B-Instruct-2507":                       "qwen3_instruct",
		"Qwen/Qwen3-30B-A3B-Instruct-2507":                  "qwen3_instruct",
		"Qwen/Qwen3-235B-A22B-Instruct-2507":                "qwen3_instruct",
		"Qwen/Qwen3.5-4B":                                   "qwen3_5",
		"Qwen/Qwen3.5-9B":                                   "qwen3_5",
		"Qwen/Qwen3.5-9B-Base":                              "role_colon",
		"Qwen/Qwen3.5-27B":                                  "qwen3_5",
		"Qwen/Qwen3.5-35B-A3B":                              "qwen3_5",
		"Qwen/Qwen3.5-35B-A3B-Base":                         "role_colon",
		"Qwen/Qwen3.5-397B-A17B":                            "qwen3_5",
		"Qwen/Qwen3.6-27B":                                  "qwen3_5",
		"Qwen/Qwen3.6-35B-A3B":                              "qwen3_5",
		"Qwen/Qwen3.8-27B":                                  "qwen3_8_xhigh_reasoning",
		"deepseek-ai/DeepSeek-V3.1":                         "deepseekv3",
		"deepseek-ai/DeepSeek-V3.1-Base":                    "role_colon",
		"openai/gpt-oss-20b":                                "gpt_oss_no_sysprompt",
		"openai/gpt-oss-120b":                               "gpt_oss_no_sysprompt",
		"moonshotai/Kimi-K2-Thinking":                       "kimi_k2",
		"moonshotai/Kimi-K2.5":                              "kimi_k25",
		"moonshotai/Kimi-K2.6":                              "kimi_k26",
		"nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16":        "nemotron3",
		"nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16":     "nemotron3",
		"nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16":     "nemotron3_ultra",
		"nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16": "nemotron3_ultra",
	}
}}

// Recommended is the cookbook's recommended renderer for a model it lists
// (even one tinker cannot render yet), "" for others.
func Recommended(baseModel string) string {
	name, _, _ := strings.Cut(baseModel, ":")
	if strings.HasPrefix(name, "thinkingmachines/Inkling") {
		return "tml_v0"
	}
	return recommended.Get()[name]
}

// ForModel returns the renderer to use for a base model: the cookbook's
// recommendation where tinker has that renderer; role_colon for the tiny
// models; for models the cookbook does not list, the family's chat format
// for chat models and role_colon for base ones; "" when none fits.
func ForModel(baseModel string) string {
	if models.IsTiny(baseModel) {
		return "role_colon"
	}
	if r := Recommended(baseModel); r != "" {
		if _, _, ok := lookup(r); ok {
			return r
		}
		return ""
	}
	return byFamily(baseModel)
}

// NoRenderer says why a base model has no renderer tinker can use (nil
// when ForModel names one).
func NoRenderer(baseModel string) error {
	if ForModel(baseModel) != "" {
		return nil
	}
	if why, ok := unsupported.Get()[Recommended(baseModel)]; ok {
		return fmt.Errorf("no chat renderer for %s: the cookbook's %s", baseModel, why)
	}
	return fmt.Errorf("no default chat renderer for %s; choose one of %s", baseModel, strings.Join(Names(), ", "))
}

func byFamily(baseModel string) string {
	name, _, _ := strings.Cut(baseModel, ":")
	_, model, _ := strings.Cut(name, "/")
	isBase := strings.HasSuffix(model, "-Base")
	family, _ := models.FamilyOf(name)
	switch {
	case family == models.Llama3 && strings.Contains(model, "-Instruct"):
		return "llama3"
	case family == models.Llama3:
		return "role_colon" // Llama-3.2-1B, Llama-3.1-8B, … are base models
	case (family == models.Qwen3 || family == models.Qwen3MoE) && isBase:
		return "role_colon"
	case family == models.Qwen3 || family == models.Qwen3MoE:
		if strings.Contains(model, "-Instruct-2507") {
			return "qwen3_instruct"
		}
		return "qwen3"
	case family == models.DeepSeekV3 && strings.HasPrefix(model, "DeepSeek-V3"):
		if isBase {
			return "role_colon"
		}
		return "deepseekv3"
	case family == models.GptOss:
		return "gpt_oss_no_sysprompt"
	}
	return ""
}

// defaultModels maps renderer name prefixes (first match wins) to a base
// model whose tokenizer suits them.
var defaultModels = []struct{ prefix, model string }{
	{"llama3", "meta-llama/Llama-3.1-8B-Instruct"},
	{"qwen3_instruct", "Qwen/Qwen3-30B-A3B-Instruct-2507"},
	{"qwen3_5", "Qwen/Qwen3.5-4B"},
	{"qwen3_8", "Qwen/Qwen3.8-27B"},
	{"qwen3_vl", "Qwen/Qwen3-VL-30B-A3B-Instruct"},
	{"qwen3", "Qwen/Qwen3-8B"},
	{"nemotron3_ultra", "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16"},
	{"nemotron3", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"},
	{"kimi_k25", "moonshotai/Kimi-K2.5"},
	{"kimi_k26", "moonshotai/Kimi-K2.6"},
	{"kimi_k2", "moonshotai/Kimi-K2-Thinking"},
	{"deepseekv3", "deepseek-ai/DeepSeek-V3.1"},
	{"gpt_oss", "openai/gpt-oss-20b"},
}

// DefaultModel names a base model whose tokenizer suits a renderer, for
// callers given only a renderer name ("" for role_colon, which fits any).
func DefaultModel(renderer string) string {
	canon, _, _ := lookup(renderer)
	for _, d := range defaultModels {
		if strings.HasPrefix(canon, d.prefix) {
			return d.model
		}
	}
	return ""
}
