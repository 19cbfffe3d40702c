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

func (s *Sequence) AttrNames() []string                      { return sequenceAttrs.names(s) }
func (s *Sequence) Attr(name string) (starlark.Value, error) { return sequenceAttrs.get(s, name) }

var sequenceAttrs = attrTable[*Sequence]{
	{name: "index", doc: "its position in the result", value: func(s *Sequence) starlark.Value { return starlark.MakeInt(s.Index) }},
	{name: "logprobs", doc: "each sampled token's logprob, or None", value: func(s *Sequence) starlark.Value {
		if s.Logprobs == nil {
			return starlark.None
		}
		l := make([]starlark.Value, len(s.Logprobs))
		for i, lp := range s.Logprobs {
			l[i] = starlark.Float(lp)
		}
		return starlark.NewList(l)
	}},
	{name: "mean_logprob", doc: "the mean of logprobs, or None", value: func(s *Sequence) starlark.Value {
		m, ok := s.MeanLogprob()
		if !ok {
			return starlark.None
		}
		return starlark.Float(m)
	}},
	{name: "stop_reason", doc: `why sampling stopped, e.g. "length" or "stop"`, value: func(s *Sequence) starlark.Value { return starlark.String(s.StopReason) }},
	{name: "text", doc: "the decoded text", value: func(s *Sequence) starlark.Value { return starlark.String(s.Text) }},
	{name: "tokens", doc: "the sampled token ids", value: func(s *Sequence) starlark.Value { return intList(s.Tokens) }},
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

func (r *SampleResult) AttrNames() []string { return sampleResultAttrs.names(r) }
func (r *SampleResult) Attr(name string) (starlark.Value, error) {
	return sampleResultAttrs.get(r, name)
}

var sampleResultAttrs = attrTable[*SampleResult]{
	{name: "model", doc: "the base model or sampler path sampled from", value: func(r *SampleResult) starlark.Value { return starlark.String(r.Model) }},
	{name: "prompt_logprobs", doc: "the prompt tokens' logprobs (None where the service gives none), or None unless prompt_logprobs=True", value: func(r *SampleResult) starlark.Value {
		if !r.WantPromptLP {
			return starlark.None
		}
		l := make([]starlark.Value, len(r.PromptLogprobs))
		for i, lp := range r.PromptLogprobs {
			if lp == nil {
				l[i] = starlark.None
			} else {
				l[i] = starlark.Float(*lp)
			}
		}
		return starlark.NewList(l)
	}},
	{name: "prompt_tokens", doc: "the prompt's token ids", value: func(r *SampleResult) starlark.Value { return intList(r.PromptTokens) }},
	{name: "sequences", doc: "the sampled sequences, a list of sequence values", value: func(r *SampleResult) starlark.Value {
		l := make([]starlark.Value, len(r.seqs))
		for i, s := range r.seqs {
			l[i] = s
		}
		return starlark.NewList(l)
	}},
	{name: "text", doc: "the first sequence's text, or None if there is none", value: func(r *SampleResult) starlark.Value {
		// The first sequence's text: the common case of num_samples=1.
		if len(r.Sequences) == 0 {
			return starlark.None
		}
		return starlark.String(r.Sequences[0].Text)
	}},
}

func (r *SampleResult) MarshalJSON() ([]byte, error) { return marshalJSON(r) }
