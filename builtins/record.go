package builtins

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/render"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// recordBuiltins are the builtins record.go defines (registryParts lists them).
var recordBuiltins = []entry{
	{docEntry{
		Name:      "record",
		Signature: "record(x, title=None)",
		Summary:   "Show a dict or struct vertically as Property/Value rows; a list of records shows as a table.",
		Example:   `record({"run": "r1", "checkpoints": 12}, title="summary")`,
	}, recordFn},
}

// recordMap is a user-made record: ordered fields with a title.
type recordMap struct {
	title  string
	keys   []string
	values []starlark.Value
}

var (
	_ RecordValue       = (*recordMap)(nil)
	_ JSONValue         = (*recordMap)(nil)
	_ starlark.HasAttrs = (*recordMap)(nil)
	_ starlark.Mapping  = (*recordMap)(nil)
	_ starlark.Iterable = (*recordMap)(nil)
)

func (r *recordMap) String() string {
	if r.title != "" {
		return fmt.Sprintf("<record %s>", r.title)
	}
	return fmt.Sprintf("<record %s>", strings.Join(r.keys, ", "))
}
func (r *recordMap) Type() string          { return "record" }
func (r *recordMap) Freeze()               {}
func (r *recordMap) Truth() starlark.Bool  { return len(r.keys) > 0 }
func (r *recordMap) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: record") }
func (r *recordMap) Len() int              { return len(r.keys) }
func (r *recordMap) AttrNames() []string   { return append([]string(nil), r.keys...) }

func (r *recordMap) Iterate() starlark.Iterator {
	l := make([]starlark.Value, len(r.keys))
	for i, k := range r.keys {
		l[i] = starlark.String(k)
	}
	return starlark.NewList(l).Iterate()
}

func (r *recordMap) Attr(name string) (starlark.Value, error) {
	for i, k := range r.keys {
		if k == name {
			return r.values[i], nil
		}
	}
	return nil, nil
}

func (r *recordMap) Get(k starlark.Value) (starlark.Value, bool, error) {
	s, ok := starlark.AsString(k)
	if !ok {
		return nil, false, nil
	}
	v, _ := r.Attr(s)
	return v, v != nil, nil
}

func (r *recordMap) Record(now time.Time) *render.Record {
	rec := &render.Record{Title: r.title}
	for i, k := range r.keys {
		rec.Fields = append(rec.Fields, render.Field{Name: k, Value: cellText(r.values[i])})
	}
	return rec
}

func (r *recordMap) RowColumns() []render.Column {
	cols := make([]render.Column, len(r.keys))
	for i, k := range r.keys {
		cols[i] = render.Column{Header: k}
	}
	return cols
}

func (r *recordMap) Row(now time.Time) []string {
	cells := make([]string, len(r.values))
	for i, v := range r.values {
		cells[i] = cellText(v)
	}
	return cells
}

func (r *recordMap) ListTitle(n int) string {
	return ops.Count(n, "record", "records")
}

func (r *recordMap) JSON() any {
	obj := make(render.Object, len(r.keys))
	for i, k := range r.keys {
		v, err := ToJSON(r.values[i])
		if err != nil {
			v = r.values[i].String()
		}
		obj[i] = render.Member{Key: k, Value: v}
	}
	return obj
}

func (r *recordMap) MarshalJSON() ([]byte, error) { return marshalJSON(r) }

func recordFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x starlark.Value
	title := ""
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "x", &x, "title?", &title); err != nil {
		return nil, err
	}
	r := &recordMap{title: title}
	switch v := x.(type) {
	case *starlark.Dict:
		for _, item := range v.Items() {
			k, ok := starlark.AsString(item[0])
			if !ok {
				return nil, fmt.Errorf("record: key %s is not a string; use string keys", item[0])
			}
			r.keys = append(r.keys, k)
			r.values = append(r.values, item[1])
		}
	case RecordValue:
		rec := v.Record(envOf(thread).Clock())
		if title == "" {
			r.title = rec.Title
		}
		for _, f := range rec.Fields {
			r.keys = append(r.keys, f.Name)
			r.values = append(r.values, starlark.String(f.Value))
		}
	case starlark.HasAttrs:
		names := v.AttrNames()
		if _, ok := v.(*starlarkstruct.Struct); !ok {
			sort.Strings(names)
		}
		for _, n := range names {
			a, err := v.Attr(n)
			if err != nil || a == nil {
				continue
			}
			r.keys = append(r.keys, n)
			r.values = append(r.values, a)
		}
	default:
		return nil, fmt.Errorf("record: got %s %s; want a dict or struct", article(x.Type()), x.Type())
	}
	return r, nil
}

// article is "an" before a vowel sound's letter, else "a": "an int".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}
