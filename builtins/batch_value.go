package builtins

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	gotime "time"

	"github.com/tinkershell/tinker/lib/batch"
	"github.com/tinkershell/tinker/lib/render"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// BatchResult is what sample_batch() returns: the run's counts and a
// summary per model.
type BatchResult struct {
	R batch.Result
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

// Table is the summary per model.
func (b *BatchResult) Table(now gotime.Time) *render.Table {
	t := &render.Table{
		Title: fmt.Sprintf("Batch %s: %d of %d rows", b.R.Output, b.R.Total-b.R.Remaining, b.R.Total),
		Columns: []render.Column{{Header: "Model"}, {Header: "Rows", Right: true}, {Header: "Missing", Right: true},
			{Header: "Mean tokens", Right: true}, {Header: "Stop reasons"}, {Header: "Mean logprob", Right: true}},
	}
	for _, m := range b.R.Models {
		reasons := make([]string, len(m.StopReasons))
		for i, r := range m.StopReasons {
			reasons[i] = fmt.Sprintf("%s %d", r.Reason, r.Count)
		}
		lp := "-"
		if m.LogprobTokens > 0 {
			lp = strconv.FormatFloat(m.MeanLogprob, 'f', 3, 64)
		}
		t.Rows = append(t.Rows, []string{m.Model, strconv.Itoa(m.Rows), strconv.Itoa(m.Missing),
			strconv.FormatFloat(m.MeanTokens, 'f', 1, 64), strings.Join(reasons, ", "), lp})
	}
	return t
}

func (b *BatchResult) JSON() any {
	models := make([]any, len(b.R.Models))
	for i, m := range b.R.Models {
		reasons := render.Object{}
		for _, r := range m.StopReasons {
			reasons = append(reasons, render.Member{Key: r.Reason, Value: r.Count})
		}
		var lp any
		if m.LogprobTokens > 0 {
			lp = m.MeanLogprob
		}
		models[i] = render.Object{{Key: "model", Value: m.Model}, {Key: "rows", Value: m.Rows}, {Key: "missing", Value: m.Missing},
			{Key: "mean_tokens", Value: m.MeanTokens}, {Key: "stop_reasons", Value: reasons}, {Key: "mean_logprob", Value: lp}}
	}
	return render.Object{{Key: "output", Value: b.R.Output}, {Key: "seed", Value: b.R.Seed}, {Key: "total", Value: b.R.Total},
		{Key: "resumed", Value: b.R.Resumed}, {Key: "written", Value: b.R.Written}, {Key: "remaining", Value: b.R.Remaining},
		{Key: "models", Value: models}}
}

func (b *BatchResult) MarshalJSON() ([]byte, error) { return marshalJSON(b) }
