package builtins

import (
	"context"
	"fmt"
	"strconv"
	gotime "time"

	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/starlark"
)

func init() {
	register(docEntry{
		Name:      "models",
		Signature: "models()",
		Summary:   "The base models the backend serves (get_server_capabilities), as a list.",
		Example:   "[m.model_name for m in models()]",
	}, modelsFn)
}

// ListModels returns the base models the backend serves.
func ListModels(ctx context.Context, c *tinkerapi.Client) ([]tinkerapi.SupportedModel, error) {
	caps, err := c.GetServerCapabilities(ctx)
	if err != nil {
		return nil, err
	}
	return caps.SupportedModels, nil
}

func modelsFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	c, err := envOf(thread).Client()
	if err != nil {
		return nil, err
	}
	ms, err := ListModels(ContextOf(thread), c)
	if err != nil {
		return nil, apiErr(err)
	}
	out := make([]starlark.Value, len(ms))
	for i := range ms {
		out[i] = &Model{M: ms[i]}
	}
	return starlark.NewList(out), nil
}

// Model is one base model of get_server_capabilities.
type Model struct{ M tinkerapi.SupportedModel }

var (
	_ RecordValue       = (*Model)(nil)
	_ JSONValue         = (*Model)(nil)
	_ starlark.HasAttrs = (*Model)(nil)
)

func (m *Model) String() string        { return fmt.Sprintf("<model %s>", m.M.ModelName) }
func (m *Model) Type() string          { return "model" }
func (m *Model) Freeze()               {}
func (m *Model) Truth() starlark.Bool  { return true }
func (m *Model) Hash() (uint32, error) { return starlark.String(m.M.ModelName).Hash() }
func (m *Model) AttrNames() []string   { return []string{"max_context_length", "model_name", "servable"} }

func (m *Model) Attr(name string) (starlark.Value, error) {
	switch name {
	case "model_name":
		return starlark.String(m.M.ModelName), nil
	case "max_context_length":
		if m.M.MaxContextLength == 0 {
			return starlark.None, nil
		}
		return starlark.MakeInt(m.M.MaxContextLength), nil
	case "servable":
		if m.M.Servable == nil {
			return starlark.None, nil
		}
		return starlark.Bool(*m.M.Servable), nil
	}
	return nil, nil
}

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
	if m.M.Servable != nil && !*m.M.Servable {
		r.Fields = append(r.Fields, render.Field{Name: "Weights", Value: "absent: " + m.M.Unavailable})
	}
	return r
}

func (m *Model) RowColumns() []render.Column {
	return []render.Column{{Header: "Model", Kind: render.ID}, {Header: "Max Context", Right: true}}
}

func (m *Model) Row(gotime.Time) []string { return []string{m.M.ModelName, m.contextText()} }

func (m *Model) ListTitle(n int) string { return Plural(n, "base model", "base models") }

func (m *Model) MarshalJSON() ([]byte, error) { return marshalJSON(m) }

func (m *Model) JSON() any {
	var ctx any
	if m.M.MaxContextLength != 0 {
		ctx = m.M.MaxContextLength
	}
	return render.Object{{Key: "model_name", Value: m.M.ModelName}, {Key: "max_context_length", Value: ctx}}
}
