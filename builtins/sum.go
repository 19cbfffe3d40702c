package builtins

import (
	"fmt"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

func init() {
	register(docEntry{
		Name:      "sum",
		Signature: "sum(iterable, start=0)",
		Summary:   "Add up numbers, as Python's sum does (ints stay exact; a float makes the total a float).",
		Example:   `sum([c.size_bytes or 0 for c in checkpoint.list(limit=0)])`,
	}, sumBuiltin)
}

// sum is not a Starlark builtin; scripts totalling sizes and rewards want it.
func sumBuiltin(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var it starlark.Iterable
	var start starlark.Value = starlark.MakeInt(0)
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "iterable", &it, "start?", &start); err != nil {
		return nil, err
	}
	if !isNumber(start) {
		return nil, fmt.Errorf("sum: start must be a number, not %s", article(start.Type())+" "+start.Type())
	}
	iter := it.Iterate()
	defer iter.Done()
	total := start
	var x starlark.Value
	for i := 0; iter.Next(&x); i++ {
		if !isNumber(x) {
			return nil, fmt.Errorf("sum: element %d is %s, not a number (sum adds ints and floats)", i, article(x.Type())+" "+x.Type())
		}
		t, err := starlark.Binary(syntax.PLUS, total, x)
		if err != nil {
			return nil, fmt.Errorf("sum: %w", err)
		}
		total = t
	}
	return total, nil
}

func isNumber(v starlark.Value) bool {
	switch v.(type) {
	case starlark.Int, starlark.Float:
		return true
	}
	return false
}
