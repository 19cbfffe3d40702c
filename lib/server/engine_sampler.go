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

func (ps poolSampler) Sample(ctx context.Context, req SampleRequest) (*engine.SampleResponse, error) {
	m, err := ps.p.Sampler(req.BaseModel, req.AdapterDir)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", req.BaseModel, err)
	}
	return m.Sample(ctx, req.SampleRequest)
}
