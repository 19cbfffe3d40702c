package builtins

import (
	"fmt"
	"sort"
	"strings"

	"go.starlark.net/lib/math"
	"go.starlark.net/lib/time"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// module is a namespace of builtins (checkpoint, run, json, ...). It is a
// starlarkstruct.Module whose missing-member error names the module
// ("module checkpoint has no .pub field or method"), so that AttrHint can
// suggest among that module's members.
type module struct{ *starlarkstruct.Module }

func (m module) Attr(name string) (starlark.Value, error) {
	if v, ok := m.Members[name]; ok {
		return v, nil
	}
	return nil, starlark.NoSuchAttrError(fmt.Sprintf("module %s has no .%s field or method", m.Name, name))
}

// stdModules are Starlark's own modules as tinker programs see them.
func stdModules() map[string]*starlarkstruct.Module {
	return map[string]*starlarkstruct.Module{"json": jsonModule(), "time": time.Module, "math": math.Module}
}

// moduleMembers lists the member names of a predeclared module.
func moduleMembers(mod string) []string {
	if m, ok := stdModules()[mod]; ok {
		return m.AttrNames()
	}
	var names []string
	for e := range registry {
		if name, ok := strings.CutPrefix(e.doc.Name, mod+"."); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}
