// Package chat renders conversations into prompt tokens for the Tinker base
// model families, the way each family's chat template does, and says which
// tokens end the assistant's turn.
package chat

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// Message is one conversation turn.
type Message struct {
	Role     string `json:"role"` // system, developer, user, assistant, tool
	Content  string `json:"content"`
	Thinking string `json:"thinking,omitempty"` // assistant reasoning, if any
}

// Rendered is a prompt ready for sampling.
type Rendered struct {
	Text        string   // the prompt as text, special tokens spelled out
	Tokens      []int    // Text encoded with the model's tokenizer
	StopTokens  []int    // sampling stops at any of these token ids
	StopStrings []string // or at any of these strings (role_colon)
}

// Renderer turns messages into a generation prompt: the conversation
// followed by the header of the assistant's next turn.
type Renderer interface {
	Name() string
	Render(msgs []Message) (Rendered, error)
	// RenderForTraining renders a finished conversation with per-token
	// weights chosen by a train-on rule (see TrainOnRules).
	RenderForTraining(msgs []Message, trainOn string) (Training, error)
}

// textRenderer is what each format implements; addGen appends the
// assistant header (false renders a finished conversation, as for training).
type textRenderer interface {
	name() string
	text(msgs []Message, addGen bool) (string, error)
	stops(tok *tokenizer.Tokenizer) ([]int, []string, error)
}

type renderer struct {
	r   textRenderer
	tok *tokenizer.Tokenizer
}

func (r renderer) Name() string { return r.r.name() }

func (r renderer) Render(msgs []Message) (Rendered, error) {
	return r.render(msgs, true)
}

func (r renderer) render(msgs []Message, addGen bool) (Rendered, error) {
	if len(msgs) == 0 {
		return Rendered{}, fmt.Errorf("render %s: no messages", r.r.name())
	}
	if err := checkRoles(msgs); err != nil {
		return Rendered{}, fmt.Errorf("render %s: %w", r.r.name(), err)
	}
	text, err := r.r.text(msgs, addGen)
	if err != nil {
		return Rendered{}, fmt.Errorf("render %s: %w", r.r.name(), err)
	}
	if _, ok := r.r.(roleColon); ok {
		// Base models expect what the tokenizer adds to any document: BOS
		// for Llama 3 and DeepSeek, nothing for Qwen.
		text = r.tok.Decode(r.tok.Encode("", true), false) + text
	}
	stopIDs, stopStrs, err := r.r.stops(r.tok)
	if err != nil {
		return Rendered{}, fmt.Errorf("render %s: %w", r.r.name(), err)
	}
	return Rendered{Text: text, Tokens: r.tok.Encode(text, false), StopTokens: stopIDs, StopStrings: stopStrs}, nil
}

var formats = map[string]func() textRenderer{
	"llama3":                 func() textRenderer { return llama3{} },
	"qwen3":                  func() textRenderer { return qwen3{thinking: true} },
	"qwen3_disable_thinking": func() textRenderer { return qwen3{thinking: false} },
	"deepseekv3":             func() textRenderer { return deepseekV3{} },
	"deepseekv3_1":           func() textRenderer { return deepseekV31{} },
	"deepseekv3_1_thinking":  func() textRenderer { return deepseekV31{thinking: true} },
	"gpt_oss":                func() textRenderer { return &GptOss{System: true, ReasoningEffort: "medium"} },
	"gpt_oss_no_sysprompt":   func() textRenderer { return &GptOss{} },
	"role_colon":             func() textRenderer { return roleColon{} },
}

// Names lists the renderers New accepts.
func Names() []string {
	var out []string
	for n := range formats {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// New returns the renderer called name, encoding with tok.
func New(name string, tok *tokenizer.Tokenizer) (Renderer, error) {
	f, ok := formats[name]
	if !ok {
		return nil, fmt.Errorf("unknown renderer %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if tok == nil {
		return nil, fmt.Errorf("renderer %s: no tokenizer", name)
	}
	return renderer{r: f(), tok: tok}, nil
}

// ForModel returns the default renderer for a Tinker base model: the
// family's chat format for chat models, role_colon for base (pretrained)
// models and the built-in tiny ones, and "" when the model is not one we can
// render for.
func ForModel(baseModel string) string {
	if models.IsTiny(baseModel) {
		return "role_colon"
	}
	name, _, _ := strings.Cut(baseModel, ":")
	_, model, _ := strings.Cut(name, "/")
	isBase := strings.HasSuffix(model, "-Base")
	family, _ := models.FamilyOf(name)
	switch family {
	case models.Llama3:
		if strings.Contains(model, "-Instruct") {
			return "llama3"
		}
		return "role_colon" // Llama-3.2-1B, Llama-3.1-8B, … are base models
	case models.Qwen3, models.Qwen3MoE:
		if isBase {
			return "role_colon"
		}
		return "qwen3"
	case models.DeepSeekV3:
		if !strings.HasPrefix(model, "DeepSeek-V3") {
			return "" // Kimi K2 shares the architecture, not the chat format
		}
		if isBase {
			return "role_colon"
		}
		if strings.HasPrefix(model, "DeepSeek-V3.1") {
			return "deepseekv3_1" // V3.1's template (non-thinking by default)
		}
		return "deepseekv3"
	case models.GptOss:
		return "gpt_oss"
	}
	return ""
}

func tokenIDs(tok *tokenizer.Tokenizer, names ...string) ([]int, error) {
	var out []int
	for _, n := range names {
		id, ok := tok.TokenID(n)
		if !ok {
			return nil, fmt.Errorf("tokenizer %s has no %s token (wrong tokenizer for this renderer?)", tok.ID(), n)
		}
		out = append(out, id)
	}
	return out, nil
}

// --- llama3 -----------------------------------------------------------------

// llama3 follows Llama 3's template: BOS, then per message a header, the
// content with surrounding whitespace trimmed (the template's |trim), <|eot_id|>.
type llama3 struct{}

func (llama3) name() string { return "llama3" }

func (llama3) text(msgs []Message, addGen bool) (string, error) {
	var b strings.Builder
	b.WriteString("<|begin_of_text|>")
	for _, m := range msgs {
		role := m.Role
		if role == "tool" {
			role = "ipython"
		}
		b.WriteString("<|start_header_id|>" + role + "<|end_header_id|>\n\n" + strings.TrimSpace(m.Content) + "<|eot_id|>")
	}
	if addGen {
		b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	}
	return b.String(), nil
}

func (llama3) stops(tok *tokenizer.Tokenizer) ([]int, []string, error) {
	ids, err := tokenIDs(tok, "<|eot_id|>")
	return ids, nil, err
}

// --- role_colon ---------------------------------------------------------------

// roleColon is the plain format for base models: "User: …\n\nAssistant: …",
// after the tokenizer's BOS (if it adds one), stopping when the model starts
// the next user turn.
type roleColon struct{}

func (roleColon) name() string { return "role_colon" }

func (roleColon) text(msgs []Message, addGen bool) (string, error) {
	var b strings.Builder
	for _, m := range msgs {
		if m.Role == "" {
			return "", fmt.Errorf("message without a role")
		}
		b.WriteString(strings.ToUpper(m.Role[:1]) + m.Role[1:] + ": " + m.Content + "\n\n")
	}
	if addGen {
		b.WriteString("Assistant:")
	}
	return b.String(), nil
}

func (roleColon) stops(tok *tokenizer.Tokenizer) ([]int, []string, error) {
	var ids []int
	if eos := tok.Config().EOSToken; eos != "" {
		if id, ok := tok.TokenID(eos); ok {
			ids = append(ids, id)
		}
	}
	return ids, []string{"\n\nUser:"}, nil
}

// DefaultModel names a base model whose tokenizer suits a renderer, for
// callers given only a renderer name ("" for role_colon, which fits any).
func DefaultModel(renderer string) string {
	switch renderer {
	case "llama3":
		return "meta-llama/Llama-3.1-8B-Instruct"
	case "qwen3", "qwen3_disable_thinking":
		return "Qwen/Qwen3-8B"
	case "deepseekv3", "deepseekv3_1", "deepseekv3_1_thinking":
		return "deepseek-ai/DeepSeek-V3.1"
	case "gpt_oss", "gpt_oss_no_sysprompt":
		return "openai/gpt-oss-20b"
	}
	return ""
}

// NewForModel returns the default renderer of a Tinker base model with its
// tokenizer (found or downloaded as tokenizer.ForModel does).
func NewForModel(ctx context.Context, baseModel string) (Renderer, error) {
	name := ForModel(baseModel)
	if name == "" {
		return nil, fmt.Errorf("no default chat renderer for %s: pass one of %s", baseModel, strings.Join(Names(), ", "))
	}
	tok, err := tokenizer.ForModel(ctx, baseModel)
	if err != nil {
		return nil, err
	}
	return New(name, tok)
}
