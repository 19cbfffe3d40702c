package builtins

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	gotime "time"

	"github.com/tinkershell/tinker/lib/render"
	"go.starlark.net/starlark"
)

// Sequence is one sampled continuation.
type Sequence struct {
	Index      int
	Text       string
	Tokens     []int
	Logprobs   []float32
	StopReason string
}

var _ starlark.HasAttrs = (*Sequence)(nil)

func (s *Sequence) String() string {
	return fmt.Sprintf("<sequence %d: %s, %s>", s.Index, Count(len(s.Tokens), "token", "tokens"), s.StopReason)
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
		m, ok := s.meanLogprob()
		if !ok {
			return starlark.None, nil
		}
		return starlark.Float(m), nil
	}
	return nil, nil
}

func (s *Sequence) meanLogprob() (float64, bool) {
	if len(s.Logprobs) == 0 {
		return 0, false
	}
	sum := 0.0
	for _, lp := range s.Logprobs {
		sum += float64(lp)
	}
	return sum / float64(len(s.Logprobs)), true
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
	Model          string
	PromptTokens   []int
	Sequences      []*Sequence
	PromptLogprobs []*float32 // nil entries where the service gives none
	WantPromptLP   bool
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
	return r.Sequences[i]
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
		l := make([]starlark.Value, len(r.Sequences))
		for i, s := range r.Sequences {
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

// Table lists the sequences: index, text, tokens, stop reason, mean logprob.
func (r *SampleResult) Table(gotime.Time) *render.Table {
	t := &render.Table{
		Title:   fmt.Sprintf("%s: %s", r.Model, Plural(len(r.Sequences), "sample", "samples")),
		Columns: []render.Column{{Header: "#", Right: true}, {Header: "Text"}, {Header: "Tokens", Right: true}, {Header: "Stop"}, {Header: "Mean logprob", Right: true}},
	}
	for _, s := range r.Sequences {
		mean := render.Missing
		if m, ok := s.meanLogprob(); ok {
			mean = strconv.FormatFloat(m, 'f', 3, 64)
		}
		t.Rows = append(t.Rows, []string{strconv.Itoa(s.Index), oneLine(s.Text), strconv.Itoa(len(s.Tokens)), s.StopReason, mean})
	}
	return t
}

// oneLine shows control characters visibly so a table row stays one line.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.NewReplacer("\n", "⏎", "\r", "␍", "\t", "⇥").Replace(s)
}

func (r *SampleResult) JSON() any {
	seqs := make([]any, len(r.Sequences))
	for i, s := range r.Sequences {
		lps := make([]any, len(s.Logprobs))
		for j, lp := range s.Logprobs {
			lps[j] = floatJSON(float64(lp))
		}
		toks := make([]any, len(s.Tokens))
		for j, t := range s.Tokens {
			toks[j] = t
		}
		seqs[i] = render.Object{
			{Key: "index", Value: s.Index},
			{Key: "text", Value: strings.ToValidUTF8(s.Text, "\uFFFD")},
			{Key: "tokens", Value: toks},
			{Key: "logprobs", Value: lps},
			{Key: "stop_reason", Value: s.StopReason},
		}
	}
	obj := render.Object{{Key: "model", Value: r.Model}, {Key: "sequences", Value: seqs}}
	if r.WantPromptLP {
		l := make([]any, len(r.PromptLogprobs))
		for i, lp := range r.PromptLogprobs {
			if lp != nil {
				l[i] = floatJSON(float64(*lp))
			}
		}
		obj = append(obj, render.Member{Key: "prompt_logprobs", Value: l})
	}
	return obj
}

// floatJSON keeps JSON valid for non-finite values.
func floatJSON(f float64) any {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil
	}
	return f
}

func (r *SampleResult) MarshalJSON() ([]byte, error) { return marshalJSON(r) }
