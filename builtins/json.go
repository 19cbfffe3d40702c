package builtins

import (
	"encoding/json"
	"fmt"
	"sort"
	gotime "time"

	"github.com/tinkershell/tinker/lib/render"
	starlarktime "go.starlark.net/lib/time"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// ToJSON converts a Starlark value to the tree render.WriteJSON prints.
// Dicts keep insertion order; tinker values give the official CLI's shape.
func ToJSON(v starlark.Value) (any, error) {
	return toJSON(v, 0)
}

func toJSON(v starlark.Value, depth int) (any, error) {
	if depth > 100 {
		return nil, fmt.Errorf("json: value nested too deeply (a cycle?)")
	}
	switch x := v.(type) {
	case JSONValue:
		return x.JSON(), nil
	case starlarktime.Time:
		return gotime.Time(x).UTC().Format(gotime.RFC3339Nano), nil
	case starlarktime.Duration:
		return gotime.Duration(x).String(), nil
	case starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(x), nil
	case starlark.Int:
		if i, ok := x.Int64(); ok {
			return i, nil
		}
		return json.Number(x.String()), nil
	case starlark.Float:
		return float64(x), nil
	case starlark.String:
		return string(x), nil
	case *starlark.Dict:
		obj := make(render.Object, 0, x.Len())
		for _, item := range x.Items() {
			k, ok := starlark.AsString(item[0])
			if !ok {
				return nil, fmt.Errorf("json: dict key %s is not a string", item[0])
			}
			val, err := toJSON(item[1], depth+1)
			if err != nil {
				return nil, err
			}
			obj = append(obj, render.Member{Key: k, Value: val})
		}
		return obj, nil
	case *starlarkstruct.Struct:
		names := x.AttrNames()
		sort.Strings(names)
		obj := make(render.Object, 0, len(names))
		for _, n := range names {
			a, _ := x.Attr(n)
			val, err := toJSON(a, depth+1)
			if err != nil {
				return nil, err
			}
			obj = append(obj, render.Member{Key: n, Value: val})
		}
		return obj, nil
	case starlark.Iterable:
		it := x.Iterate()
		defer it.Done()
		l := []any{}
		var e starlark.Value
		for it.Next(&e) {
			val, err := toJSON(e, depth+1)
			if err != nil {
				return nil, err
			}
			l = append(l, val)
		}
		return l, nil
	}
	return nil, fmt.Errorf("json: cannot encode a %s", v.Type())
}

// marshalJSON lets Go values satisfy encoding/json.Marshaler, which the
// Starlark json module honours, so json.encode(x) gives the CLI's shape.
func marshalJSON(v JSONValue) ([]byte, error) {
	return render.MarshalJSON(v.JSON())
}
