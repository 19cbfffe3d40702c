package batch

import (
	"context"
	"errors"
	"fmt"

	"github.com/tinkershell/tinker/lib/modelref"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// model is one of a job's models, bound to a sampling session.
type model struct {
	*modelref.Model
	name    string // as the job gives it: the rows' "model"
	sampler string // sampling session id
}

// openModel resolves a base model name or tinker:// sampler path and
// creates its sampling session.
func openModel(ctx context.Context, s *tinkerapi.Session, name string) (*model, error) {
	ref, err := modelref.Resolve(ctx, s, name)
	var ue *tinkerapi.UserError
	switch {
	case errors.As(err, &ue):
		return nil, err // it names the model already
	case err != nil:
		return nil, fmt.Errorf("model %s: %w", name, err)
	}
	id, err := s.CreateSamplingSession(ctx, ref.SessionBase(), ref.Path)
	if err != nil {
		return nil, err
	}
	return &model{Model: ref, name: name, sampler: id}, nil
}

// request builds the sampling request of a prompt on this model (one
// sample; the seed is set per row).
func (m *model) request(p *Prompt, params *Params) (tinkerapi.SampleRequest, error) {
	req := tinkerapi.SampleRequest{NumSamples: 1, MaxTokens: params.MaxTokens, Temperature: params.Temperature,
		TopP: params.TopP, TopK: params.TopK, StopStrings: params.StopStrings, StopTokens: params.StopTokens}
	switch {
	case p.Tokens != nil:
		req.PromptTokens = p.Tokens
	case m.Tok == nil:
		return req, fmt.Errorf("prompt %s on %s needs the model's tokenizer: %w", p.ID, m.name, m.TokErr)
	case p.Text != nil:
		req.PromptTokens = m.Tok.Encode(*p.Text, true)
	default:
		r, err := m.Renderer(params.Renderer)
		if err != nil {
			return req, fmt.Errorf("prompt %s: %w", p.ID, err)
		}
		stopGiven := len(params.StopStrings) > 0 || len(params.StopTokens) > 0
		if err := modelref.Messages(r, p.Messages, &req, stopGiven); err != nil {
			return req, fmt.Errorf("prompt %s: %w", p.ID, err)
		}
	}
	if len(req.PromptTokens) == 0 {
		return req, errors.New("prompt " + p.ID + " encodes to no tokens")
	}
	return req, nil
}

// decode is the text of generated tokens, or "" without a tokenizer.
func (m *model) decode(toks []int) string { return m.Decode(toks) }
