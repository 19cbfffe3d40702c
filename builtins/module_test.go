package builtins

import (
	"slices"
	"testing"

	"go.starlark.net/starlark"
)

// Universe makes no module's members until the module is used, and then
// the members every registry row and json's library name, no more.
func TestModulesFillOnFirstUse(t *testing.T) {
	u := Universe()
	for _, mod := range []string{"checkpoint", "io", "run", "session", "billing", "json"} {
		m, ok := u[mod].(module)
		if !ok {
			t.Fatalf("%s is a %T, not a module", mod, u[mod])
		}
		if m.Members != nil {
			t.Errorf("%s: members made before first use", mod)
		}
		names := m.AttrNames()
		if want := moduleMembers(mod); !slices.Equal(names, want) {
			t.Errorf("%s: members %v, want %v", mod, names, want)
		}
		v, err := m.Attr(names[0])
		if b, ok := v.(*starlark.Builtin); err != nil || !ok || b.Name() != mod+"."+names[0] {
			t.Errorf("%s.%s: %v, %v", mod, names[0], v, err)
		}
	}
	if _, err := u["checkpoint"].(module).Attr("pub"); err == nil || err.Error() != "module checkpoint has no .pub field or method" {
		t.Errorf("missing member: %v", err)
	}
}
