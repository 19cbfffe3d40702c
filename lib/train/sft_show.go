package train

import (
	"fmt"

	"github.com/tinkershell/tinker/lib/render"
)

// SFTTable is the table of a run's steps, titled with where it ended.
func SFTTable(res *SFTResult) *render.Table {
	title := fmt.Sprintf("SFT of %s: %d of %d steps", res.BaseModel, res.LastStep(), res.Total)
	t := &render.Table{Title: title, HeadTail: true, Columns: []render.Column{{Header: "Step", Right: true},
		{Header: "Epoch", Right: true, Drop: dropOrder("epoch")}, {Header: "Loss", Right: true},
		{Header: "Eval NLL", Right: true, Drop: dropOrder("eval_nll")}, {Header: "LR", Right: true, Drop: dropOrder("learning_rate")},
		{Header: "Tokens", Right: true, Drop: dropOrder("tokens")}, {Header: "Time", Right: true, Drop: dropOrder("time")}}}
	for _, m := range res.Steps {
		eval := ""
		if m.EvalNLL != nil {
			eval = fixed4(*m.EvalNLL)
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(m.Step), fmt.Sprint(m.Epoch), fixed4(m.Loss), eval,
			fmt.Sprintf("%.3g", m.LearningRate), fmt.Sprint(m.Tokens), fmt.Sprintf("%.2fs", m.Seconds)})
	}
	return t
}

// SFTJSON is a run as JSON: its steps (under "metrics", as the value
// calls them) and checkpoints.
func SFTJSON(res *SFTResult) any {
	steps := make([]any, len(res.Steps))
	for i, m := range res.Steps {
		o := render.Object{{Key: "step", Value: m.Step}, {Key: "epoch", Value: m.Epoch}, {Key: "loss", Value: m.Loss}}
		if m.EvalNLL != nil {
			o = append(o, render.Member{Key: "eval_nll", Value: *m.EvalNLL})
		}
		o = append(o, render.Member{Key: "learning_rate", Value: m.LearningRate}, render.Member{Key: "tokens", Value: m.Tokens},
			render.Member{Key: "num_sequences", Value: m.Sequences}, render.Member{Key: "time", Value: m.Seconds})
		steps[i] = o
	}
	return render.Object{{Key: "base_model", Value: res.BaseModel}, {Key: "total_steps", Value: res.Total}, {Key: "metrics", Value: steps},
		{Key: "state_checkpoint", Value: optString(res.StatePath)}, {Key: "sampler_checkpoint", Value: optString(res.SamplerPath)},
		{Key: "warnings", Value: warningsJSON(res.Warnings)}}
}

// optString is s, or JSON null when empty.
func optString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
