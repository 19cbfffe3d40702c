// Package chat renders conversations into tokens for the Tinker base model
// families exactly as tinker-cookbook's renderers do: generation prompts,
// stop conditions and supervised examples (tokens and 0/1 weights). Each
// message is encoded as the cookbook's chunks (header, output parts), so
// the token ids match, not only the text. docs/compat.md ("Renderers")
// lists every name and what differs.
package chat

import (
	"context"
	"fmt"
	"strings"

	"github.com/tinkershell/tinker/lib/tokenizer"
)

// Rendered is a prompt ready for sampling.
type Rendered struct {
	Text        string   // the prompt as text, special tokens spelled out
	Tokens      []int    // the prompt's token ids
	StopTokens  []int    // sampling stops at any of these token ids
	StopStrings []string // or at any of these strings (role_colon)
}

// Renderer turns messages into generation prompts and training examples.
type Renderer interface {
	Name() string
	// Render is the generation prompt: the conversation followed by the
	// header of the assistant's next turn.
	Render(msgs []Message) (Rendered, error)
	// RenderForTraining renders a finished conversation with per-token
	// weights chosen by a train-on rule (see TrainOnRules), as one example.
	RenderForTraining(msgs []Message, trainOn string) (Training, error)
	// RenderExamples is RenderForTraining split into one example per
	// trained turn where the renderer rewrites history.
	RenderExamples(msgs []Message, trainOn string) ([]Training, error)
	// ToolPrefix is the messages that declare tools (with an optional
	// system prompt), to put before a conversation.
	ToolPrefix(tools []Tool, system string) ([]Message, error)
}

type renderer struct {
	name string
	f    format
	tok  *tokenizer.Tokenizer
}

func (r renderer) Name() string { return r.name }

func (r renderer) Render(msgs []Message) (Rendered, error) {
	if len(msgs) == 0 {
		return Rendered{}, fmt.Errorf("render %s: no messages", r.name)
	}
	if err := checkRoles(msgs); err != nil {
		return Rendered{}, fmt.Errorf("render %s: %w", r.name, err)
	}
	toks, err := r.prompt(msgs)
	if err != nil {
		return Rendered{}, fmt.Errorf("render %s: %w", r.name, err)
	}
	e := &enc{tok: r.tok}
	ids, strs := r.f.stops(e)
	if e.err != nil {
		return Rendered{}, fmt.Errorf("render %s: %w", r.name, e.err)
	}
	return Rendered{Text: r.tok.Decode(toks, false), Tokens: toks, StopTokens: ids, StopStrings: strs}, nil
}

// New returns the renderer called name (a cookbook name or one of
// tinker's older aliases), encoding with tok.
func New(name string, tok *tokenizer.Tokenizer) (Renderer, error) {
	canon, f, ok := lookup(name)
	if why, no := unsupported.Get()[name]; no {
		return nil, fmt.Errorf("renderer %s is not available: %s; use a model whose renderer is (%s)", name, why, strings.Join(Names(), ", "))
	}
	if !ok {
		return nil, fmt.Errorf("unknown renderer %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if tok == nil {
		return nil, fmt.Errorf("renderer %s: no tokenizer", name)
	}
	return renderer{name: canon, f: f(), tok: tok}, nil
}

// NewForModel returns the recommended renderer of a Tinker base model with
// its tokenizer (found or downloaded as tokenizer.ForModel does).
func NewForModel(ctx context.Context, baseModel string) (Renderer, error) {
	if err := NoRenderer(baseModel); err != nil {
		return nil, err
	}
	name := ForModel(baseModel)
	tok, err := tokenizer.ForModel(ctx, baseModel)
	if err != nil {
		return nil, err
	}
	return New(name, tok)
}
