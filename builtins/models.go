package builtins

import (
	"fmt"

	"github.com/tinkershell/tinker/lib/ops"
	"go.starlark.net/starlark"
)

// modelsBuiltins are the builtins models.go defines (registryParts lists them).
var modelsBuiltins = []entry{
	{docEntry{
		Name:      "models",
		Signature: "models()",
		Summary:   "The base models the backend serves (get_server_capabilities), as a list.",
		Example:   "[m.model_name for m in models()]",
	}, modelsFn},
}

func modelsFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	c, err := envOf(thread).Client()
	if err != nil {
		return nil, err
	}
	ms, err := ops.ListModels(ContextOf(thread), c)
	if err != nil {
		return nil, apiErr(err)
	}
	out := make([]starlark.Value, len(ms))
	for i := range ms {
		out[i] = &Model{ops.Model{M: ms[i]}}
	}
	return starlark.NewList(out), nil
}

// Model is one base model of get_server_capabilities.
type Model struct{ ops.Model }

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

func (m *Model) AttrNames() []string                      { return modelAttrs.names(m) }
func (m *Model) Attr(name string) (starlark.Value, error) { return modelAttrs.get(m, name) }

var modelAttrs = attrTable[*Model]{
	{name: "max_context_length", doc: "the longest sequence it takes, in tokens, or None if the backend does not say", value: func(m *Model) starlark.Value {
		if m.M.MaxContextLength == 0 {
			return starlark.None
		}
		return starlark.MakeInt(m.M.MaxContextLength)
	}},
	{name: "model_name", doc: "the name sample() and training_client() take", value: func(m *Model) starlark.Value { return starlark.String(m.M.ModelName) }},
	{name: "servable", doc: "whether its weights are on the server now (tinker serve), or None if the backend does not say", value: func(m *Model) starlark.Value {
		if m.M.Servable == nil {
			return starlark.None
		}
		return starlark.Bool(*m.M.Servable)
	}},
}

func (m *Model) MarshalJSON() ([]byte, error) { return marshalJSON(m) }
