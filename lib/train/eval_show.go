package train

import (
	"fmt"

	"github.com/tinkershell/tinker/lib/render"
)

// EvalTable is an evaluation's rows, titled with the mean score.
func EvalTable(res *EvalResult) *render.Table {
	title := fmt.Sprintf("Evaluation of %s: score %.3f over %d completions", res.Model, res.Score, len(res.Rows))
	if res.NLL != nil {
		title += fmt.Sprintf(", reference NLL %.4f per token", *res.NLL)
	}
	t := &render.Table{Title: title, Columns: []render.Column{{Header: "Row"}, {Header: "Prompt"}, {Header: "Completion"},
		{Header: "Reference"}, {Header: "Score", Right: true}}}
	for _, r := range res.Rows {
		t.Rows = append(t.Rows, []string{r.Where, r.Prompt, r.Completion, r.Reference, fmt.Sprintf("%.3g", r.Score)})
	}
	return t
}

// EvalJSON is an evaluation as JSON.
func EvalJSON(res *EvalResult) any {
	rows := make([]any, len(res.Rows))
	for i, r := range res.Rows {
		o := render.Object{{Key: "row", Value: r.Where}, {Key: "prompt", Value: r.Prompt}, {Key: "completion", Value: r.Completion},
			{Key: "reference", Value: r.Reference}, {Key: "score", Value: r.Score}}
		if r.NLL != nil {
			o = append(o, render.Member{Key: "nll", Value: *r.NLL})
		}
		rows[i] = o
	}
	var nll any
	if res.NLL != nil {
		nll = *res.NLL
	}
	return render.Object{{Key: "model", Value: res.Model}, {Key: "score", Value: res.Score}, {Key: "nll", Value: nll}, {Key: "rows", Value: rows}}
}
