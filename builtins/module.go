package builtins

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"go.starlark.net/lib/math"
	"go.starlark.net/lib/time"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// module is a namespace of builtins (checkpoint, run, json, ...). It is a
// starlarkstruct.Module whose missing-member error names the module
// ("module checkpoint has no .pub field or method"), so that AttrHint can
// suggest among that module's members. The members of tinker's own modules
// and of json are made on first use (fill): a program that names none of
// them, such as `tinker -c '1+1'`, does not build them at every start.
type module struct {
	*starlarkstruct.Module
	fill *moduleFill // nil when Members is complete
}

// moduleFill makes a module's members once.
type moduleFill struct {
	once sync.Once
	make func() starlark.StringDict
}

// lazyModule is the module name whose members make returns on first use.
func lazyModule(name string, make func() starlark.StringDict) module {
	return module{&starlarkstruct.Module{Name: name}, &moduleFill{make: make}}
}

// members are the module's members, made by the first call.
func (m module) members() starlark.StringDict {
	if m.fill != nil {
		m.fill.once.Do(func() { m.Members = m.fill.make() })
	}
	return m.Members
}

func (m module) Attr(name string) (starlark.Value, error) {
	if v, ok := m.members()[name]; ok {
		return v, nil
	}
	return nil, starlark.NoSuchAttrError(fmt.Sprintf("module %s has no .%s field or method", m.Name, name))
}

// AttrNames and Freeze see the members made: starlarkstruct.Module's read
// Members as it stands.
func (m module) AttrNames() []string { return m.members().Keys() }

func (m module) Freeze() { m.members().Freeze() }

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
