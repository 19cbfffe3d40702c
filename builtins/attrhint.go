package builtins

import (
	"strings"

	"github.com/tinkershell/tinker/lib/suggest"
)

// AttrHint completes Starlark's error for a missing attribute of a tinker
// value ("checkpoint has no .size field or method") or a missing member of a
// predeclared module ("module checkpoint has no .pub ...") with the name
// probably meant, when Starlark's own spelling hint found none: a close
// spelling, or an attribute that begins with or contains the name
// (size → size_bytes, path → tinker_path). Other messages come back as they
// are.
func AttrHint(msg string) string {
	rest, ok := strings.CutSuffix(msg, " field or method")
	if !ok {
		return msg
	}
	typ, name, ok := strings.Cut(rest, " has no .")
	if !ok || name == "" {
		return msg
	}
	var names []string
	if mod, ok := strings.CutPrefix(typ, "module "); ok {
		names = moduleMembers(mod)
	} else if t, ok := lookupTypeDoc(typ); ok {
		for _, a := range t.Attrs {
			names = append(names, a.Name)
		}
	}
	if s := nearestAttr(name, names); s != "" && s != name {
		return msg + " (did you mean ." + s + "?)"
	}
	return msg
}

// nearestAttr prefers an attribute starting with name, then one containing
// it, then the closest spelling; "" when none is convincing.
func nearestAttr(name string, names []string) string {
	name = strings.ToLower(name)
	for _, match := range []func(string) bool{
		func(n string) bool { return strings.HasPrefix(n, name) },
		func(n string) bool { return len(name) >= 3 && strings.Contains(n, name) },
	} {
		for _, n := range names {
			if match(n) {
				return n
			}
		}
	}
	return suggest.Nearest(name, names)
}
