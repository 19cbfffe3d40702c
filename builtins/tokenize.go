package builtins

import (
	"fmt"
	"sort"
	"strings"
	gotime "time"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/modelref"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tokenizer"
	"go.starlark.net/starlark"
)

// tokenizeBuiltins are the builtins tokenize.go defines (registryParts lists them).
var tokenizeBuiltins = []entry{
	{docEntry{
		Name:      "tokenizer",
		Signature: "tokenizer(model)",
		Summary:   "The base model's tokenizer: .encode(text, special_tokens=False), .decode(ids), .id, .vocab_size.",
		Details:   "Found in the Hugging Face cache (HF_HOME, HF_HUB_CACHE) or downloaded from the Hub (HF_ENDPOINT, HF_TOKEN; HF_HUB_OFFLINE=1 forbids it).",
		Example:   "t = tokenizer(\"Qwen/Qwen3-8B\")\nlen(t.encode(\"How many tokens is this?\"))",
	}, tokenizerFn},
	{docEntry{
		Name:      "render",
		Signature: "render(model_or_renderer, messages)",
		Summary:   "Render a conversation the way sample(messages=...) does: the prompt text, its tokens and the stop tokens.",
		DetailsFrom: func() string {
			return "The first argument is a base model (its default renderer) or a renderer name: " + renderNames() + "."
		},
		Example: "r = render(\"Qwen/Qwen3-8B\", [{\"role\": \"user\", \"content\": \"hi\"}])\nlen(r.tokens)",
	}, renderFn},
}

// tokenizerValue is a tokenizer as a Starlark value; its id is a Hub repo
// or the tiny models' byte tokenizer.
type tokenizerValue struct{ t *tokenizer.Tokenizer }

var _ starlark.HasAttrs = (*tokenizerValue)(nil)

func (v *tokenizerValue) String() string        { return fmt.Sprintf("<tokenizer %s>", v.t.ID()) }
func (v *tokenizerValue) Type() string          { return "tokenizer" }
func (v *tokenizerValue) Freeze()               {}
func (v *tokenizerValue) Truth() starlark.Bool  { return true }
func (v *tokenizerValue) Hash() (uint32, error) { return starlark.String(v.t.ID()).Hash() }

func (v *tokenizerValue) AttrNames() []string { return tokenizerAttrs.names(v) }
func (v *tokenizerValue) Attr(name string) (starlark.Value, error) {
	return tokenizerAttrs.get(v, name)
}

var tokenizerAttrs = attrTable[*tokenizerValue]{
	{name: "decode", doc: "decode(ids, skip_special_tokens=False): the text of a list of token ids", value: func(v *tokenizerValue) starlark.Value {
		return starlark.NewBuiltin("decode", v.decode)
	}},
	{name: "encode", doc: "encode(text, special_tokens=False): the token ids of a text", value: func(v *tokenizerValue) starlark.Value {
		return starlark.NewBuiltin("encode", v.encode)
	}},
	{name: "id", doc: "the Hub repository it comes from", value: func(v *tokenizerValue) starlark.Value { return starlark.String(v.t.ID()) }},
	{name: "vocab_size", doc: "the number of token ids", value: func(v *tokenizerValue) starlark.Value { return starlark.MakeInt(v.t.VocabSize()) }},
}

func (v *tokenizerValue) encode(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var text string
	special := false
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "text", &text, "special_tokens?", &special); err != nil {
		return nil, err
	}
	return intList(v.t.Encode(text, special)), nil
}

func (v *tokenizerValue) decode(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var idsV starlark.Value
	skip := false
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "ids", &idsV, "skip_special_tokens?", &skip); err != nil {
		return nil, err
	}
	ids, err := intsArg(idsV)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	for _, id := range ids {
		if id < 0 || id >= v.t.VocabSize() {
			return nil, fmt.Errorf("decode: token id %d is outside the vocabulary (0..%d)", id, v.t.VocabSize()-1)
		}
	}
	return starlark.String(v.t.Decode(ids, skip)), nil
}

func tokenizerFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var model string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "model", &model); err != nil {
		return nil, err
	}
	t, err := tokenizer.ForModel(ContextOf(thread), model)
	if err != nil {
		return nil, err
	}
	return &tokenizerValue{t: t}, nil
}

// renderedValue is render()'s result.
type renderedValue struct {
	Renderer string
	R        chat.Rendered
}

var (
	_ RecordValue = (*renderedValue)(nil)
	_ JSONValue   = (*renderedValue)(nil)
)

func (r *renderedValue) String() string {
	return fmt.Sprintf("<rendered %s: %s>", r.Renderer, ops.Count(len(r.R.Tokens), "token", "tokens"))
}
func (r *renderedValue) Type() string                             { return "rendered" }
func (r *renderedValue) Freeze()                                  {}
func (r *renderedValue) Truth() starlark.Bool                     { return true }
func (r *renderedValue) Hash() (uint32, error)                    { return starlark.String(r.R.Text).Hash() }
func (r *renderedValue) AttrNames() []string                      { return renderedAttrs.names(r) }
func (r *renderedValue) Attr(name string) (starlark.Value, error) { return renderedAttrs.get(r, name) }

var renderedAttrs = attrTable[*renderedValue]{
	{name: "renderer", doc: "the renderer's name", value: func(r *renderedValue) starlark.Value { return starlark.String(r.Renderer) }},
	{name: "stop_strings", doc: "the strings that end the assistant's turn", value: func(r *renderedValue) starlark.Value { return strList(r.R.StopStrings) }},
	{name: "stop_tokens", doc: "the token ids that end the assistant's turn", value: func(r *renderedValue) starlark.Value { return intList(r.R.StopTokens) }},
	{name: "text", doc: "the prompt text", value: func(r *renderedValue) starlark.Value { return starlark.String(r.R.Text) }},
	{name: "tokens", doc: "the prompt's token ids", value: func(r *renderedValue) starlark.Value { return intList(r.R.Tokens) }},
}

func (r *renderedValue) Record(gotime.Time) *render.Record {
	return &render.Record{Title: "Rendered with " + r.Renderer, Fields: []render.Field{
		{Name: "Text", Value: ops.OneLine(r.R.Text)},
		{Name: "Tokens", Value: fmt.Sprint(len(r.R.Tokens))},
		{Name: "Stop tokens", Value: fmt.Sprint(r.R.StopTokens)},
		{Name: "Stop strings", Value: fmt.Sprintf("%q", r.R.StopStrings)},
	}}
}
func (r *renderedValue) RowColumns() []render.Column {
	return []render.Column{{Header: "Renderer"}, {Header: "Tokens", Right: true}, {Header: "Text"}}
}
func (r *renderedValue) Row(gotime.Time) []string {
	return []string{r.Renderer, fmt.Sprint(len(r.R.Tokens)), ops.OneLine(r.R.Text)}
}
func (r *renderedValue) ListTitle(n int) string {
	return ops.Plural(n, "rendered prompt", "rendered prompts")
}
func (r *renderedValue) JSON() any {
	toks := make([]any, len(r.R.Tokens))
	for i, t := range r.R.Tokens {
		toks[i] = t
	}
	stops := make([]any, len(r.R.StopTokens))
	for i, t := range r.R.StopTokens {
		stops[i] = t
	}
	return render.Object{{Key: "renderer", Value: r.Renderer}, {Key: "text", Value: r.R.Text}, {Key: "tokens", Value: toks}, {Key: "stop_tokens", Value: stops}}
}
func (r *renderedValue) MarshalJSON() ([]byte, error) { return marshalJSON(r) }

func renderFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var which string
	var msgsV starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "model_or_renderer", &which, "messages", &msgsV); err != nil {
		return nil, err
	}
	msgs, err := messagesArg(msgsV)
	if err != nil {
		return nil, fmt.Errorf("%s: messages: %w", b.Name(), err)
	}
	ctx := ContextOf(thread)
	var r chat.Renderer
	names := chat.Names()
	sort.Strings(names)
	if i := sort.SearchStrings(names, which); i < len(names) && names[i] == which {
		model := chat.DefaultModel(which)
		if model == "" {
			return nil, fmt.Errorf("%s: renderer %s needs a model; pass a base model name instead", b.Name(), which)
		}
		r, err = modelref.Renderer(ctx, model, which)
	} else {
		r, err = modelref.Renderer(ctx, which, "")
	}
	if err != nil {
		return nil, err
	}
	out, err := r.Render(msgs)
	if err != nil {
		return nil, err
	}
	return &renderedValue{Renderer: r.Name(), R: out}, nil
}

// renderNames is the renderer names as fmt.Sprint prints them ([a b c]),
// without its reflection, which showed in every start's profile.
func renderNames() string { return "[" + strings.Join(chat.Names(), " ") + "]" }
