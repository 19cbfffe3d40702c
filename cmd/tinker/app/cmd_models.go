package app

import (
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/render"
)

// tinker models: the base models the backend serves, as models() returns
// them (an addition; the official CLI has no such command).

var modelsCmd = &command{
	Name:    "models",
	Summary: "List the base models the backend serves.",
	API:     listModels,
}

func listModels(r *apiRun) error {
	c, err := r.preflight()
	if err != nil {
		return err
	}
	ms, err := ops.ListModels(r.ctx, c)
	if err != nil {
		return err
	}
	if r.jsonMode() {
		list := make([]any, len(ms))
		for i := range ms {
			list[i] = (&ops.Model{M: ms[i]}).JSON()
		}
		return r.writeJSON(render.Object{{Key: "supported_models", Value: list}})
	}
	t := &render.Table{Title: ops.Plural(len(ms), "base model", "base models"), Columns: (&ops.Model{}).RowColumns()}
	for i := range ms {
		t.Rows = append(t.Rows, (&ops.Model{M: ms[i]}).Row(r.now()))
	}
	return r.writeTable(t)
}
