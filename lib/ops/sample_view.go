package ops

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	gotime "time"

	"github.com/tinkershell/tinker/lib/render"
)

// Sequence is one sampled continuation.
type Sequence struct {
	Index      int
	Text       string
	Tokens     []int
	Logprobs   []float32
	StopReason string
}

func (s *Sequence) MeanLogprob() (float64, bool) {
	if len(s.Logprobs) == 0 {
		return 0, false
	}
	sum := 0.0
	for _, lp := range s.Logprobs {
		sum += float64(lp)
	}
	return sum / float64(len(s.Logprobs)), true
}

// SampleResult is a sampling call's outcome: the sequences and, when asked,
// the prompt's log-probabilities.
type SampleResult struct {
	Model          string
	PromptTokens   []int
	Sequences      []*Sequence
	PromptLogprobs []*float32 // nil entries where the service gives none
	WantPromptLP   bool
}

// Table lists the sequences: index, text, tokens, stop reason, mean logprob.
func (r *SampleResult) Table(gotime.Time) *render.Table {
	t := &render.Table{
		Title:   fmt.Sprintf("%s: %s", r.Model, Plural(len(r.Sequences), "sample", "samples")),
		Columns: []render.Column{{Header: "#", Right: true}, {Header: "Text"}, {Header: "Tokens", Right: true}, {Header: "Stop"}, {Header: "Mean logprob", Right: true}},
	}
	for _, s := range r.Sequences {
		mean := render.Missing
		if m, ok := s.MeanLogprob(); ok {
			mean = strconv.FormatFloat(m, 'f', 3, 64)
		}
		t.Rows = append(t.Rows, []string{strconv.Itoa(s.Index), OneLine(s.Text), strconv.Itoa(len(s.Tokens)), s.StopReason, mean})
	}
	return t
}

// OneLine shows control characters visibly so a table row stays one line.
func OneLine(s string) string {
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
