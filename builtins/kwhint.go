package builtins

import (
	"fmt"
	"strings"

	"go.starlark.net/starlark"

	"github.com/tinkershell/tinker/lib/suggest"
)

// unpackArgs is starlark.UnpackArgs with a hint for a mistyped keyword
// that Starlark's own spelling check misses (epoch= for epochs=: it
// compares the name with only some of the parameters).
func unpackArgs(fn string, args starlark.Tuple, kwargs []starlark.Tuple, pairs ...any) error {
	err := starlark.UnpackArgs(fn, args, kwargs, pairs...)
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		return err
	}
	_, kw, ok := strings.Cut(err.Error(), "unexpected keyword argument ")
	if !ok {
		return err
	}
	var names []string
	for i := 0; i < len(pairs); i += 2 {
		if s, ok := pairs[i].(string); ok {
			names = append(names, strings.TrimRight(s, "?"))
		}
	}
	if near := suggest.Nearest(strings.Trim(kw, `"`), names); near != "" {
		return fmt.Errorf("%w (did you mean %s?)", err, near)
	}
	return err
}
