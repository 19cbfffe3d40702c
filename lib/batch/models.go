package batch

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// model is one of a job's models, bound to a sampling session.
type model struct {
	name    string // as the job gives it: the rows' "model"
	base    string // base model: the tokenizer's and renderer's
	sampler string // sampling session id
	tok     *tokenizer.Tokenizer
	tokErr  error // why there is no tokenizer (fatal for text and messages prompts only)
}

// openModel resolves a base model name or tinker:// sampler path and
// creates its sampling session.
func openModel(ctx context.Context, s *tinkerapi.Session, name string) (*model, error) {
	m := &model{name: name, base: name}
	path := ""
	if strings.HasPrefix(name, "tinker://") {
		p, err := tinkerapi.ParsePath(name)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", name, err)
		}
		if p.Kind != "sampler_weights" {
			return nil, fmt.Errorf("%s is a training checkpoint: save sampler weights and sample its sampler_weights/ path", name)
		}
		info, err := s.Client().WeightsInfo(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", name, err)
		}
		m.base, path = info.BaseModel, name
	}
	m.tok, m.tokErr = TokenizerFor(ctx, s, m.base, path)
	sessionBase := m.base
	if path != "" {
		sessionBase = "" // a checkpoint is addressed by its path alone
	}
	id, err := s.CreateSamplingSession(ctx, sessionBase, path)
	if err != nil {
		return nil, err
	}
	m.sampler = id
	return m, nil
}

// TokenizerFor finds a model's tokenizer the way the SDK does: for a
// checkpoint (path set), the one the service names for its training run,
// else the one known for the base model's name.
func TokenizerFor(ctx context.Context, s *tinkerapi.Session, base, path string) (*tokenizer.Tokenizer, error) {
	if path != "" && !models.IsTiny(base) {
		if p, err := tinkerapi.ParsePath(path); err == nil {
			if info, err := s.GetInfo(ctx, p.RunID); err == nil {
				if id := info.ModelData.Tokenizer(); id != "" {
					if tok, err := tokenizer.ForRepo(ctx, id, ""); err == nil {
						return tok, nil
					}
				}
			}
		}
	}
	return tokenizer.ForModel(ctx, base)
}

// request builds the sampling request of a prompt on this model (one
// sample; the seed is set per row).
func (m *model) request(p *Prompt, params *Params) (tinkerapi.SampleRequest, error) {
	req := tinkerapi.SampleRequest{NumSamples: 1, MaxTokens: params.MaxTokens, Temperature: params.Temperature,
		TopP: params.TopP, TopK: params.TopK, StopStrings: params.StopStrings, StopTokens: params.StopTokens}
	switch {
	case p.Tokens != nil:
		req.PromptTokens = p.Tokens
	case m.tok == nil:
		return req, fmt.Errorf("prompt %s on %s needs the model's tokenizer: %w", p.ID, m.name, m.tokErr)
	case p.Text != nil:
		req.PromptTokens = m.tok.Encode(*p.Text, true)
	default:
		name := params.Renderer
		if name == "" {
			if name = chat.ForModel(m.base); name == "" {
				return req, fmt.Errorf("prompt %s: no default chat renderer for %s; choose one of %s",
					p.ID, m.base, strings.Join(chat.Names(), ", "))
			}
		}
		r, err := chat.New(name, m.tok)
		if err != nil {
			return req, err
		}
		rendered, err := r.Render(p.Messages)
		if err != nil {
			return req, fmt.Errorf("prompt %s: %w", p.ID, err)
		}
		req.PromptTokens = rendered.Tokens
		if len(params.StopStrings) == 0 && len(params.StopTokens) == 0 {
			if len(rendered.StopTokens) > 0 {
				req.StopTokens = rendered.StopTokens
			} else {
				req.StopStrings = rendered.StopStrings
			}
		}
	}
	if len(req.PromptTokens) == 0 {
		return req, errors.New("prompt " + p.ID + " encodes to no tokens")
	}
	return req, nil
}

// decode is the text of generated tokens, or "" without a tokenizer.
func (m *model) decode(toks []int) string {
	if m.tok == nil {
		return ""
	}
	return m.tok.Decode(toks, true)
}
