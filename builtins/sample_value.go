package builtins

import (
	"fmt"

	"github.com/tinkershell/tinker/lib/ops"
	"go.starlark.net/starlark"
)

// Sequence is one sampled continuation.
type Sequence struct{ ops.Sequence }

var _ starlark.HasAttrs = (*Sequence)(nil)

func (s *Sequence) String() string {
	return fmt.Sprintf("<sequence %d: %s, %s>", s.Index, ops.Count(len(s.Tokens), "token", "tokens"), s.StopReason)
}
func (s *Sequence) Type() string          { return "sequence" }
func (s *Sequence) Freeze()               {}
func (s *Sequence) Truth() starlark.Bool  { return true }
func (s *Sequence) Hash() (uint32, error) { return starlark.String(s.Text).Hash() }
func (s *Sequence) AttrNames() []string {
	return []string{"index", "logprobs", "mean_logprob", "stop_reason", "text", "tokens"}
}

func (s *Sequence) Attr(name string) (starlark.Value, error) {
	switch name {
	case "index":
		return starlark.MakeInt(s.Index), nil
	case "text":
		return starlark.String(s.Text), nil
	case "tokens":
		return intList(s.Tokens), nil
	case "logprobs":
		if s.Logprobs == nil {
			return starlark.None, nil
		}
		l := make([]starlark.Value, len(s.Logprobs))
		for i, lp := range s.Logprobs {
			l[i] = starlark.Float(lp)
		}
		return starlark.NewList(l), nil
	case "stop_reason":
		return starlark.String(s.StopReason), nil
	case "mean_logprob":
		m, ok := s.MeanLogprob()
		if !ok {
			return starlark.None, nil
		}
		return starlark.Float(m), nil
	}
	return nil, nil
}

func intList(v []int) *starlark.List {
	l := make([]starlark.Value, len(v))
	for i, x := range v {
		l[i] = starlark.MakeInt(x)
	}
	return starlark.NewList(l)
}

// SampleResult is what sample() returns: the sequences and, when asked,
// the prompt's log-probabilities.
type SampleResult struct {
	ops.SampleResult
	seqs []*Sequence // the sequences as values, made once so that each is one object
}

var (
	_ Tabular            = (*SampleResult)(nil)
	_ JSONValue          = (*SampleResult)(nil)
	_ starlark.HasAttrs  = (*SampleResult)(nil)
	_ starlark.Indexable = (*SampleResult)(nil)
)

func (r *SampleResult) String() string {
	return fmt.Sprintf("<sample %s: %d sequence(s)>", r.Model, len(r.Sequences))
}
func (r *SampleResult) Type() string          { return "sample_result" }
func (r *SampleResult) Freeze()               {}
func (r *SampleResult) Truth() starlark.Bool  { return len(r.Sequences) > 0 }
func (r *SampleResult) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: sample_result") }
func (r *SampleResult) Len() int              { return len(r.Sequences) }
func (r *SampleResult) Index(i int) starlark.Value {
	return r.seqs[i]
}

func newSampleResult(res *ops.SampleResult) *SampleResult {
	r := &SampleResult{SampleResult: *res}
	for _, s := range res.Sequences {
		r.seqs = append(r.seqs, &Sequence{*s})
	}
	return r
}
func (r *SampleResult) AttrNames() []string {
	return []string{"model", "prompt_logprobs", "prompt_tokens", "sequences", "text"}
}

func (r *SampleResult) Attr(name string) (starlark.Value, error) {
	switch name {
	case "model":
		return starlark.String(r.Model), nil
	case "prompt_tokens":
		return intList(r.PromptTokens), nil
	case "sequences":
		l := make([]starlark.Value, len(r.seqs))
		for i, s := range r.seqs {
			l[i] = s
		}
		return starlark.NewList(l), nil
	case "text":
		// The first sequence's text: the common case of num_samples=1.
		if len(r.Sequences) == 0 {
			return starlark.None, nil
		}
		return starlark.String(r.Sequences[0].Text), nil
	case "prompt_logprobs":
		if !r.WantPromptLP {
			return starlark.None, nil
		}
		l := make([]starlark.Value, len(r.PromptLogprobs))
		for i, lp := range r.PromptLogprobs {
			if lp == nil {
				l[i] = starlark.None
			} else {
				l[i] = starlark.Float(*lp)
			}
		}
		return starlark.NewList(l), nil
	}
	return nil, nil
}

func (r *SampleResult) MarshalJSON() ([]byte, error) { return marshalJSON(r) }
