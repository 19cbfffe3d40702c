package builtins

import (
	"fmt"
	"sort"

	"github.com/tinkershell/tinker/lib/batch"
	"github.com/tinkershell/tinker/lib/ops"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// BatchResult is what sample_batch() returns: the run's counts and a
// summary per model.
type BatchResult struct {
	ops.BatchResult
	// The job's models and prompt ids, which order .rows.
	models, prompts []string
}

var (
	_ Tabular           = (*BatchResult)(nil)
	_ JSONValue         = (*BatchResult)(nil)
	_ starlark.HasAttrs = (*BatchResult)(nil)
)

func (b *BatchResult) String() string        { return fmt.Sprintf("<batch %s>", b.R.Output) }
func (b *BatchResult) Type() string          { return "batch" }
func (b *BatchResult) Freeze()               {}
func (b *BatchResult) Truth() starlark.Bool  { return true }
func (b *BatchResult) Hash() (uint32, error) { return starlark.String(b.R.Output).Hash() }

// rows reads the job's rows from the output file, ordered by model, then
// prompt, then sample as the job lists them.
func (b *BatchResult) rows() (starlark.Value, error) {
	rows, err := batch.ReadRows(b.R.Output)
	if err != nil {
		return nil, err
	}
	rank := func(list []string) map[string]int {
		m := make(map[string]int, len(list))
		for i, s := range list {
			m[s] = i
		}
		return m
	}
	mr, pr := rank(b.models), rank(b.prompts)
	var kept []batch.Row
	for _, r := range rows {
		_, okM := mr[r.Model]
		_, okP := pr[r.PromptID]
		if okM && okP {
			kept = append(kept, r)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool {
		a, c := kept[i], kept[j]
		if mr[a.Model] != mr[c.Model] {
			return mr[a.Model] < mr[c.Model]
		}
		if pr[a.PromptID] != pr[c.PromptID] {
			return pr[a.PromptID] < pr[c.PromptID]
		}
		return a.Sample < c.Sample
	})
	out := make([]starlark.Value, len(kept))
	for i, r := range kept {
		toks := make([]starlark.Value, len(r.Tokens))
		for k, t := range r.Tokens {
			toks[k] = starlark.MakeInt(t)
		}
		var lp starlark.Value = starlark.None
		if len(r.Logprobs) > 0 {
			sum := 0.0
			for _, x := range r.Logprobs {
				sum += float64(x)
			}
			lp = starlark.Float(sum / float64(len(r.Logprobs)))
		}
		out[i] = starlarkstruct.FromStringDict(starlark.String("row"), starlark.StringDict{
			"model": starlark.String(r.Model), "prompt_id": starlark.String(r.PromptID), "sample": starlark.MakeInt(r.Sample),
			"seed": starlark.MakeInt64(r.Seed), "text": starlark.String(r.Text), "tokens": starlark.NewList(toks),
			"stop_reason": starlark.String(r.StopReason), "mean_logprob": lp,
		})
	}
	return starlark.NewList(out), nil
}

func (b *BatchResult) AttrNames() []string                      { return batchAttrs.names(b) }
func (b *BatchResult) Attr(name string) (starlark.Value, error) { return batchAttrs.get(b, name) }

var batchAttrs = attrTable[*BatchResult]{
	{name: "models", doc: "one dict per model: model, rows, missing, mean_tokens, stop_reasons, mean_logprob", value: func(b *BatchResult) starlark.Value {
		l := make([]starlark.Value, len(b.R.Models))
		for i, m := range b.R.Models {
			l[i] = modelSummary(m)
		}
		return starlark.NewList(l)
	}},
	{name: "output", doc: "the JSONL file the rows are in", value: func(b *BatchResult) starlark.Value { return starlark.String(b.R.Output) }},
	{name: "remaining", doc: "the rows still to sample (the same call again samples just these)", value: func(b *BatchResult) starlark.Value { return starlark.MakeInt(b.R.Remaining) }},
	{name: "resumed", doc: "the rows already in the file when this call started", value: func(b *BatchResult) starlark.Value { return starlark.MakeInt(b.R.Resumed) }},
	{name: "rows", doc: "the job's rows read back from output: .model, .prompt_id, .sample, .seed, .text, .tokens, .stop_reason, .mean_logprob", get: (*BatchResult).rows},
	{name: "seed", doc: "the job's base seed, which fixes every row's seed", value: func(b *BatchResult) starlark.Value { return starlark.MakeInt64(b.R.Seed) }},
	{name: "total", doc: "the rows of the job", value: func(b *BatchResult) starlark.Value { return starlark.MakeInt(b.R.Total) }},
	{name: "written", doc: "the rows this call added", value: func(b *BatchResult) starlark.Value { return starlark.MakeInt(b.R.Written) }},
}

// modelSummary is one model's summary as a dict.
func modelSummary(m batch.ModelSummary) starlark.Value {
	reasons := starlark.NewDict(len(m.StopReasons))
	for _, r := range m.StopReasons {
		_ = reasons.SetKey(starlark.String(r.Reason), starlark.MakeInt(r.Count))
	}
	d := starlark.NewDict(6)
	for _, kv := range []struct {
		k string
		v starlark.Value
	}{{"model", starlark.String(m.Model)}, {"rows", starlark.MakeInt(m.Rows)}, {"missing", starlark.MakeInt(m.Missing)},
		{"mean_tokens", starlark.Float(m.MeanTokens)}, {"stop_reasons", reasons}, {"mean_logprob", meanLogprob(m)}} {
		_ = d.SetKey(starlark.String(kv.k), kv.v)
	}
	return d
}

func meanLogprob(m batch.ModelSummary) starlark.Value {
	if m.LogprobTokens == 0 {
		return starlark.None
	}
	return starlark.Float(m.MeanLogprob)
}

func (b *BatchResult) MarshalJSON() ([]byte, error) { return marshalJSON(b) }
