package builtins

import (
	"slices"
	"strings"

	"go.starlark.net/lib/math"
	"go.starlark.net/lib/time"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// Universe returns the predeclared names of every tinker program: the
// registered builtins, their modules, and the standard Starlark modules
// json, time, math and struct.
func Universe() starlark.StringDict {
	u := make(starlark.StringDict, 64) // more than enough: modules hold most builtins
	u["struct"] = starlark.NewBuiltin("struct", starlarkstruct.Make)
	u["module"] = starlark.NewBuiltin("module", starlarkstruct.MakeModule)
	u["json"] = lazyModule("json", func() starlark.StringDict { return jsonModule().Members })
	u["time"], u["math"] = module{Module: time.Module}, module{Module: math.Module}
	var mods []string
	for e := range registry {
		if e.fn == nil {
			continue // provided by the shell (print), or bound below (help)
		}
		mod, _, ok := strings.Cut(e.doc.Name, ".")
		if !ok {
			u[e.doc.Name] = starlark.NewBuiltin(e.doc.Name, e.fn)
		} else if !slices.Contains(mods, mod) {
			mods = append(mods, mod)
		}
	}
	u["help"] = starlark.NewBuiltin("help", helpFn)
	for _, mod := range mods {
		u[mod] = lazyModule(mod, func() starlark.StringDict { return registryMembers(mod) })
	}
	return u
}

// registryMembers makes the builtins of module mod, keyed by their names in
// it.
func registryMembers(mod string) starlark.StringDict {
	m := starlark.StringDict{}
	for e := range registry {
		if name, ok := strings.CutPrefix(e.doc.Name, mod+"."); ok && e.fn != nil {
			m[name] = starlark.NewBuiltin(e.doc.Name, e.fn)
		}
	}
	return m
}
