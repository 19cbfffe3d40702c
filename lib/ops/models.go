package ops

import (
	"context"
	"fmt"
	"strconv"
	gotime "time"

	"github.com/tinkershell/tinker/lib/lazyre"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/suggest"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// ListModels returns the base models the backend serves.
func ListModels(ctx context.Context, c *tinkerapi.Client) ([]tinkerapi.SupportedModel, error) {
	caps, err := c.GetServerCapabilities(ctx)
	if err != nil {
		return nil, err
	}
	return caps.SupportedModels, nil
}

// Model is one base model of get_server_capabilities.
type Model struct{ M tinkerapi.SupportedModel }

func (m *Model) contextText() string {
	if m.M.MaxContextLength == 0 {
		return render.Missing
	}
	return strconv.Itoa(m.M.MaxContextLength)
}

func (m *Model) Record(gotime.Time) *render.Record {
	r := &render.Record{Title: "Model: " + m.M.ModelName, Fields: []render.Field{
		{Name: "Model", Value: m.M.ModelName},
		{Name: "Max Context", Value: m.contextText()},
	}}
	if m.M.Servable != nil && !*m.M.Servable { // tinker serve lists its whole catalog
		r.Fields = append(r.Fields, render.Field{Name: "Weights", Value: "absent: " + m.M.Unavailable})
	}
	return r
}

func (m *Model) RowColumns() []render.Column {
	return []render.Column{{Header: "Model", Kind: render.ID}, {Header: "Max Context", Right: true}}
}

func (m *Model) Row(gotime.Time) []string { return []string{m.M.ModelName, m.contextText()} }

func (m *Model) ListTitle(n int) string { return Plural(n, "base model", "base models") }

func (m *Model) JSON() any {
	var ctx any
	if m.M.MaxContextLength != 0 {
		ctx = m.M.MaxContextLength
	}
	return render.Object{{Key: "model_name", Value: m.M.ModelName}, {Key: "max_context_length", Value: ctx}}
}

// runIDRE matches the start of a training run id (a UUID).
var runIDRE = lazyre.New(`^[0-9a-f]{8}-[0-9a-f]{4}-`)

// CheckBaseModel turns a name the backend does not serve into a one-line
// error that says what was meant, before anything is fetched for it (a
// run id given as a model would otherwise send tinker looking for a
// tokenizer of that name). Backends that list no models are not checked.
func CheckBaseModel(ctx context.Context, c *tinkerapi.Client, base string) error {
	ms, err := ListModels(ctx, c)
	if err != nil || len(ms) == 0 {
		return nil // the sampling call itself will say what is wrong
	}
	names := make([]string, len(ms))
	for i, m := range ms {
		if m.ModelName == base {
			return nil
		}
		names[i] = m.ModelName
	}
	if runIDRE.MatchString(base) {
		return UserErr(fmt.Sprintf("%s is a training run id, not a base model: sample one of its sampler checkpoints, e.g. tinker://%s/sampler_weights/NAME (checkpoint.list(run_id=%q) lists them)", base, base, base), "")
	}
	hint := ""
	if s := suggest.Nearest(base, names); s != "" {
		hint = fmt.Sprintf("; did you mean %s?", s)
	}
	return UserErr(fmt.Sprintf("unknown base model %s%s (models() lists the %d this backend serves)", base, hint, len(names)), "")
}
