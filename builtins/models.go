package builtins

import (
	"fmt"

	"github.com/tinkershell/tinker/lib/ops"
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
func (m *Model) AttrNames() []string   { return []string{"max_context_length", "model_name"} }

func (m *Model) Attr(name string) (starlark.Value, error) {
	switch name {
	case "model_name":
		return starlark.String(m.M.ModelName), nil
	case "max_context_length":
		if m.M.MaxContextLength == 0 {
			return starlark.None, nil
		}
		return starlark.MakeInt(m.M.MaxContextLength), nil
	}
	return nil, nil
}

func (m *Model) MarshalJSON() ([]byte, error) { return marshalJSON(m) }
