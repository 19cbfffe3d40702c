package builtins

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/starlark"
)

// sampleBuiltins are the builtins sample.go defines (registryParts lists them).
var sampleBuiltins = []entry{
	{docEntry{
		Name: "sample",
		Signature: "sample(model, prompt=None, tokens=None, messages=None, max_tokens=64, temperature=1.0, top_k=-1, top_p=1.0, " +
			"stop=None, seed=None, num_samples=1, prompt_logprobs=False, renderer=None)",
		Summary: "Sample from a base model, a tinker:// sampler path or a run; give exactly one of prompt, tokens, messages.",
		Details: "model may be a run of sft(), dpo() or rl() (its sampler checkpoint).\n" +
			"prompt is text encoded with the base model's tokenizer; tokens are ids; messages are\n" +
			"[{\"role\": ..., \"content\": ...}] rendered by the model's chat renderer (or renderer=).\n" +
			"stop takes strings or token ids; for messages it defaults to the renderer's end-of-turn tokens.\n" +
			"temperature=0 is greedy; seed makes sampling reproducible. The result displays as a table and has\n" +
			".sequences[i].text, .tokens, .logprobs, .stop_reason, and .prompt_logprobs when asked.",
		Example: "r = sample(\"tinker-local/tiny-llama\", prompt=\"Once upon\", max_tokens=16, seed=7)\nr.sequences[0].text",
	}, sampleFn},
}

func sampleFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var modelV starlark.Value
	var promptV, tokensV, messagesV, stopV, seedV, rendererV starlark.Value = starlark.None, starlark.None, starlark.None, starlark.None, starlark.None, starlark.None
	req := tinkerapi.NewSampleRequest(nil)
	var temperature, topP starlark.Value = starlark.Float(1.0), starlark.Float(1.0)
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "model", &modelV, "prompt?", &promptV, "tokens?", &tokensV, "messages?", &messagesV,
		"max_tokens?", &req.MaxTokens, "temperature?", &temperature, "top_k?", &req.TopK, "top_p?", &topP, "stop?", &stopV,
		"seed?", &seedV, "num_samples?", &req.NumSamples, "prompt_logprobs?", &req.PromptLogprobs, "renderer?", &rendererV); err != nil {
		return nil, err
	}
	fail := func(format string, a ...any) error { return fmt.Errorf("%s: %s", b.Name(), fmt.Sprintf(format, a...)) }
	o := ops.SampleOptions{}
	var err error
	if o.Model, err = samplerName(modelV); err != nil {
		return nil, fail("%v", err)
	}
	given := 0
	for _, v := range []starlark.Value{promptV, tokensV, messagesV} {
		if v != starlark.None {
			given++
		}
	}
	if given != 1 {
		return nil, fail("give exactly one of prompt=, tokens= or messages=")
	}
	if promptV != starlark.None {
		s, ok := starlark.AsString(promptV)
		if !ok {
			return nil, fail("prompt must be a string, got %s", promptV.Type())
		}
		o.Prompt = &s
	}
	if tokensV != starlark.None {
		if o.Tokens, err = intsArg(tokensV); err != nil {
			return nil, fail("tokens: %v", err)
		}
	}
	if messagesV != starlark.None {
		if o.Messages, err = messagesArg(messagesV); err != nil {
			return nil, fail("messages: %v", err)
		}
	}
	if o.Renderer, err = optString(rendererV, "renderer"); err != nil {
		return nil, fail("%v", err)
	}
	t, ok := starlark.AsFloat(temperature)
	if !ok || t < 0 {
		return nil, fail("temperature must be a number >= 0")
	}
	p, ok := starlark.AsFloat(topP)
	if !ok || p <= 0 || p > 1 {
		return nil, fail("top_p must be in (0, 1]")
	}
	req.Temperature, req.TopP = t, p
	if req.MaxTokens < 1 {
		return nil, fail("max_tokens must be at least 1")
	}
	if req.NumSamples < 1 {
		return nil, fail("num_samples must be at least 1")
	}
	if req.TopK == 0 || req.TopK < -1 {
		return nil, fail("top_k must be -1 (no limit) or positive")
	}
	if req.Seed, err = optInt64Arg(seedV, "seed"); err != nil {
		return nil, fail("%v", err)
	}
	if stopV != starlark.None {
		o.StopGiven = true
		if req.StopStrings, req.StopTokens, err = stopArg(stopV); err != nil {
			return nil, fail("stop: %v", err)
		}
	}
	o.Request = req
	res, err := envOf(thread).Sample(ContextOf(thread), o)
	if err != nil {
		return nil, err
	}
	return newSampleResult(res), nil
}

// Sample runs ops.Sample on the interpreter's session, reusing its
// sampling sessions, and clears the status line the wait drew.
func (e *Env) Sample(ctx context.Context, o ops.SampleOptions) (*ops.SampleResult, error) {
	s, err := e.Session(ctx)
	if err != nil {
		return nil, apiErr(err)
	}
	defer e.clearStatus()
	return ops.Sample(ctx, s, e.samplers(), o)
}

func intsArg(v starlark.Value) ([]int, error) {
	it, ok := v.(starlark.Iterable)
	if !ok {
		return nil, fmt.Errorf("want a list of ints, got %s", v.Type())
	}
	var out []int
	iter := it.Iterate()
	defer iter.Done()
	var x starlark.Value
	for iter.Next(&x) {
		n, err := tokenID(x)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// tokenID reads one token id, an int that fits in 32 bits (the wire
// format's width); the vocabulary is checked where it is known.
func tokenID(x starlark.Value) (int, error) {
	i, ok := x.(starlark.Int)
	if !ok {
		return 0, fmt.Errorf("want token ids (ints), got %s", x.Type())
	}
	n, err := starlark.AsInt32(i)
	if err != nil {
		return 0, fmt.Errorf("token id %s is out of range", i)
	}
	return n, nil
}

// stopArg accepts a string, a list of strings or a list of token ids.
func stopArg(v starlark.Value) (strs []string, toks []int, err error) {
	if s, ok := starlark.AsString(v); ok {
		return []string{s}, nil, nil
	}
	l, ok := v.(*starlark.List)
	if !ok {
		return nil, nil, fmt.Errorf("want a string or a list of strings or token ids, got %s", v.Type())
	}
	for i := 0; i < l.Len(); i++ {
		switch x := l.Index(i).(type) {
		case starlark.String:
			strs = append(strs, string(x))
		case starlark.Int:
			n, err := tokenID(x)
			if err != nil {
				return nil, nil, err
			}
			toks = append(toks, n)
		default:
			return nil, nil, fmt.Errorf("want strings or token ids, got %s", x.Type())
		}
	}
	if len(strs) > 0 && len(toks) > 0 {
		return nil, nil, fmt.Errorf("use either strings or token ids, not both")
	}
	return strs, toks, nil
}

func messagesArg(v starlark.Value) ([]chat.Message, error) {
	l, ok := v.(*starlark.List)
	if !ok {
		return nil, fmt.Errorf("want a list of {\"role\": ..., \"content\": ...} dicts, got %s", v.Type())
	}
	msgs := make([]chat.Message, 0, l.Len())
	for i := 0; i < l.Len(); i++ {
		d, ok := l.Index(i).(*starlark.Dict)
		if !ok {
			return nil, fmt.Errorf("message %d is %s %s, want a dict", i, article(l.Index(i).Type()), l.Index(i).Type())
		}
		get := func(k string) (string, error) {
			x, found, _ := d.Get(starlark.String(k))
			if !found || x == starlark.None {
				return "", nil
			}
			s, ok := starlark.AsString(x)
			if !ok {
				return "", fmt.Errorf("message %d: %s must be a string", i, k)
			}
			return s, nil
		}
		for _, k := range []string{"role", "thinking", "tool_call_id", "name"} {
			if _, err := get(k); err != nil {
				return nil, err
			}
		}
		if c, found, _ := d.Get(starlark.String("content")); found {
			if _, isList := c.(*starlark.List); !isList {
				if _, err := get("content"); err != nil {
					return nil, err
				}
			}
		}
		m, err := messageOf(d)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if m.Role == "" {
			return nil, fmt.Errorf("message %d has no role", i)
		}
		msgs = append(msgs, m)
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("no messages")
	}
	return msgs, nil
}

// messageOf reads a message dict through chat.Message's JSON form, so
// list content, tool_calls, tool_call_id, name and trainable come through
// as the JSONL readers take them.
func messageOf(d *starlark.Dict) (chat.Message, error) {
	j, err := ToJSON(d)
	if err != nil {
		return chat.Message{}, err
	}
	b, err := render.MarshalJSON(j)
	if err != nil {
		return chat.Message{}, err
	}
	var m chat.Message
	if err := json.Unmarshal(b, &m); err != nil {
		return chat.Message{}, err
	}
	return m, nil
}
