package builtins

import (
	"strings"

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
	for name, m := range stdModules() {
		u[name] = module{m}
	}
	members := map[string]starlark.StringDict{}
	for e := range registry {
		if e.fn == nil {
			continue // provided by the shell (print), or bound below (help)
		}
		b := starlark.NewBuiltin(e.doc.Name, e.fn)
		mod, name, ok := strings.Cut(e.doc.Name, ".")
		if !ok {
			u[e.doc.Name] = b
			continue
		}
		if members[mod] == nil {
			members[mod] = starlark.StringDict{}
		}
		members[mod][name] = b
	}
	u["help"] = starlark.NewBuiltin("help", helpFn)
	for mod, m := range members {
		u[mod] = module{&starlarkstruct.Module{Name: mod, Members: m}}
	}
	return u
}
