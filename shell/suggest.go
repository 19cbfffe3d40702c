package shell

import (
	"sort"
	"strings"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/suggest"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
)

// The resolver reports a misspelt builtin as "undefined: chekpoint"; the
// shell adds the name it probably meant.

// resolveMessage is the first resolver error, with a suggestion when the
// undefined name is close to a predeclared one.
func resolveMessage(errs resolve.ErrorList) string {
	e := errs[0]
	if name, ok := strings.CutPrefix(e.Msg, "undefined: "); ok {
		if s := suggest.Nearest(name, predeclaredNames()); s != "" {
			e.Msg += " (did you mean " + s + "?)"
		}
	}
	return e.Error()
}

// predeclaredNames are the names every program sees: tinker's builtins,
// the shell's own (print, argv) and Starlark's universe.
func predeclaredNames() []string {
	names := []string{"print", "argv"}
	for n := range builtins.Universe() {
		names = append(names, n)
	}
	for n := range starlark.Universe {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
