package shell

import (
	"fmt"
	"sort"
)

// warnShadowed warns, once per name, when a statement at the prompt has
// bound the name of a builtin module (run = sft(...) hides the run
// module): Starlark has no del, so the module stays hidden for the rest
// of the session and a later run.list() fails far from the cause.
func (in *Interp) warnShadowed() {
	var names []string
	for name, v := range in.predeclared {
		if g, ok := in.globals[name]; ok && v.Type() == "module" && g != v && !in.shadowed[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if in.shadowed == nil {
			in.shadowed = map[string]bool{}
		}
		in.shadowed[name] = true
		fmt.Fprintf(in.IO.Err, "warning: %[1]s now names your value, which hides the %[1]s module until the prompt restarts; "+
			"to keep the module, name the value something else (%[1]s_result = ...)\n", name)
	}
}
