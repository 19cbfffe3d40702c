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
func (b *BatchResult) AttrNames() []string {
	return []string{"models", "output", "remaining", "resumed", "rows", "seed", "total", "written"}
}

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

func (b *BatchResult) Attr(name string) (starlark.Value, error) {
	switch name {
	case "output":
		return starlark.String(b.R.Output), nil
	case "remaining":
		return starlark.MakeInt(b.R.Remaining), nil
	case "resumed":
		return starlark.MakeInt(b.R.Resumed), nil
	case "seed":
		return starlark.MakeInt64(b.R.Seed), nil
	case "total":
		return starlark.MakeInt(b.R.Total), nil
	case "written":
		return starlark.MakeInt(b.R.Written), nil
	case "rows":
		return b.rows()
	case "models":
		l := make([]starlark.Value, len(b.R.Models))
		for i, m := range b.R.Models {
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
			l[i] = d
		}
		return starlark.NewList(l), nil
	}
	return nil, nil
}

func meanLogprob(m batch.ModelSummary) starlark.Value {
	if m.LogprobTokens == 0 {
		return starlark.None
	}
	return starlark.Float(m.MeanLogprob)
}

func (b *BatchResult) MarshalJSON() ([]byte, error) { return marshalJSON(b) }
