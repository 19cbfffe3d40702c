package builtins

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	gotime "time"

	"github.com/tinkershell/tinker/lib/render"
	starlarkjson "go.starlark.net/lib/json"
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
	return nil, fmt.Errorf("json: cannot encode %s %s", article(v.Type()), v.Type())
}

// marshalJSON lets Go values satisfy encoding/json.Marshaler, which the
// Starlark json module honours, so json.encode(x) gives the CLI's shape.
func marshalJSON(v JSONValue) ([]byte, error) {
	return render.MarshalJSON(v.JSON())
}

// jsonModule is Starlark's json module with encode and encode_indent that
// always produce valid JSON: the library quotes printable-ASCII strings
// with Go's strconv, which writes U+007F as \x7f, an escape JSON lacks.
func jsonModule() *starlarkstruct.Module {
	members := make(starlark.StringDict, len(starlarkjson.Module.Members))
	for k, v := range starlarkjson.Module.Members {
		members[k] = v
	}
	encode := starlarkjson.Module.Members["encode"].(*starlark.Builtin)
	members["encode"] = starlark.NewBuiltin("json.encode", func(t *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		v, err := starlark.Call(t, encode, args, kwargs)
		if err != nil {
			return nil, err
		}
		return starlark.String(fixHexEscapes(string(v.(starlark.String)))), nil
	})
	members["encode_indent"] = starlark.NewBuiltin("json.encode_indent", func(t *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		prefix, indent := "", "\t" // keyword-only, as in the library
		if err := starlark.UnpackArgs(b.Name(), nil, kwargs, "prefix?", &prefix, "indent?", &indent); err != nil {
			return nil, err
		}
		v, err := starlark.Call(t, members["encode"], args, nil)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, []byte(v.(starlark.String)), prefix, indent); err != nil {
			return nil, fmt.Errorf("%s: %v", b.Name(), err)
		}
		return starlark.String(buf.String()), nil
	})
	return &starlarkstruct.Module{Name: "json", Members: members}
}

// fixHexEscapes rewrites the \xHH escapes of Go-quoted strings as \u00HH.
// In JSON text a backslash only occurs inside strings, and \\ is skipped as
// a pair, so every \x found is such an escape.
func fixHexEscapes(s string) string {
	if !strings.Contains(s, `\x`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		if s[i+1] == 'x' && i+3 < len(s) {
			b.WriteString(`\u00`)
			b.WriteString(s[i+2 : i+4])
			i += 3
			continue
		}
		b.WriteString(s[i : i+2])
		i++
	}
	return b.String()
}
