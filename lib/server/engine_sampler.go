package server

import (
	"context"
	"fmt"

	"github.com/tinkershell/tinker/lib/engine"
)

// EngineSampler serves asample from the pure-Go engine: base models come
// from the pool (built-in tiny models, --model NAME=DIR, or the Hugging Face
// cache) with the checkpoint's PEFT adapter applied.
func EngineSampler(p *engine.Pool) Sampler { return poolSampler{p} }

type poolSampler struct{ p *engine.Pool }

func (ps poolSampler) Sample(ctx context.Context, req SampleRequest) (*SampleResponse, error) {
	m, err := ps.p.Sampler(req.BaseModel, req.AdapterDir)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", req.BaseModel, err)
	}
	r, err := m.Sample(ctx, engine.SampleRequest{
		Prompt: req.Prompt, NumSamples: req.NumSamples, MaxTokens: req.MaxTokens, Temperature: req.Temperature,
		TopK: req.TopK, TopP: req.TopP, Seed: req.Seed, StopTokens: req.StopTokens, StopStrings: req.StopStrings,
		PromptLogprobs: req.PromptLogprobs, TopKPromptLogprobs: req.TopKPromptLogprobs,
	})
	if err != nil {
		return nil, err
	}
	out := &SampleResponse{PromptLogprobs: r.PromptLogprobs}
	for _, s := range r.Sequences {
		out.Sequences = append(out.Sequences, SampledSequence{Tokens: s.Tokens, Logprobs: s.Logprobs, StopReason: s.StopReason})
	}
	if r.TopKPromptLogprobs != nil {
		out.TopKPromptLogprobs = make([][]TopKEntry, len(r.TopKPromptLogprobs))
		for i, row := range r.TopKPromptLogprobs {
			if row == nil {
				continue
			}
			out.TopKPromptLogprobs[i] = make([]TopKEntry, len(row))
			for j, e := range row {
				out.TopKPromptLogprobs[i][j] = TopKEntry{e.Token, e.Logprob}
			}
		}
	}
	return out, nil
}
