package ops

import (
	"context"
	"strings"
	"sync"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/modelref"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// SampleOptions is one sample() call in Go terms.
type SampleOptions struct {
	Model    string // base model name or tinker:// path
	Prompt   *string
	Tokens   []int
	Messages []chat.Message
	Renderer string
	Request  tinkerapi.SampleRequest // PromptTokens is filled in
	// StopGiven says the caller chose stop conditions (else defaults apply).
	StopGiven bool
}

// Samplers remembers the sampling session opened for each model or path
// within one Tinker session, so repeated calls reuse it. The zero value is
// empty and ready; a nil one remembers nothing.
type Samplers struct {
	mu  sync.Mutex
	ids map[string]string
}

func (m *Samplers) get(key string) string {
	if m == nil {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ids[key]
}

func (m *Samplers) set(key, id string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ids == nil {
		m.ids = map[string]string{}
	}
	m.ids[key] = id
}

// Sample runs one sampling call on s: resolves the model, encodes the
// prompt, creates (or reuses, through samplers) a sampling session and
// decodes the result.
func Sample(ctx context.Context, s *tinkerapi.Session, samplers *Samplers, o SampleOptions) (*SampleResult, error) {
	// A base model not sampled before is checked first, so that a
	// mistyped name is not sent looking for a tokenizer.
	if !strings.HasPrefix(o.Model, "tinker://") && samplers.get(o.Model) == "" {
		if err := CheckBaseModel(ctx, s.Client(), o.Model); err != nil {
			return nil, err
		}
	}
	m, err := modelref.Resolve(ctx, s, o.Model)
	if err != nil {
		return nil, APIErr(err)
	}
	req, err := samplePrompt(m, o)
	if err != nil {
		return nil, err
	}
	id := samplers.get(m.Key())
	if id == "" {
		if id, err = s.CreateSamplingSession(ctx, m.SessionBase(), m.Path); err != nil {
			return nil, SessionErr(err)
		}
		samplers.set(m.Key(), id)
	}
	resp, err := s.Sample(ctx, id, req)
	if err != nil {
		return nil, SessionErr(err)
	}
	return sampleResult(o.Model, m, req, resp), nil
}

// samplePrompt fills in the request's prompt tokens from whichever of
// prompt, messages or tokens was given.
func samplePrompt(m *modelref.Model, o SampleOptions) (tinkerapi.SampleRequest, error) {
	req := o.Request
	switch {
	case o.Prompt != nil:
		tok, err := m.Tokenizer()
		if err != nil {
			return req, err
		}
		req.PromptTokens = tok.Encode(*o.Prompt, true)
	case o.Messages != nil:
		r, err := m.Renderer(o.Renderer)
		if err != nil {
			return req, err
		}
		if err := modelref.Messages(r, o.Messages, &req, o.StopGiven); err != nil {
			return req, err
		}
	default:
		req.PromptTokens = o.Tokens
	}
	if len(req.PromptTokens) == 0 {
		return req, UserErr("the prompt is empty; give some text or tokens", "")
	}
	return req, nil
}

func sampleResult(model string, m *modelref.Model, req tinkerapi.SampleRequest, resp *tinkerapi.SampleResponse) *SampleResult {
	out := &SampleResult{Model: model, PromptTokens: req.PromptTokens, WantPromptLP: req.PromptLogprobs, PromptLogprobs: resp.PromptLogprobs}
	for i, seq := range resp.Sequences {
		out.Sequences = append(out.Sequences, &Sequence{Index: i, Text: m.Decode(seq.Tokens), Tokens: seq.Tokens, Logprobs: seq.Logprobs, StopReason: seq.StopReason})
	}
	return out
}
