package builtins

import (
	"sort"

	"go.starlark.net/starlark"
)

// A value type's attributes are one table: each row names an attribute,
// says what it is (help(value) and the README print that line) and reads
// it. AttrNames, Attr and the type's help all derive from the table, so
// they cannot drift apart.

// attr is one attribute of a value of type T.
type attr[T any] struct {
	name, doc string
	// value reads an attribute that cannot fail, get one that can; one of
	// the two is set. Keeping field's getter as it is, rather than wrapping
	// it in a closure, lets the tables initialise without allocating.
	value func(T) starlark.Value
	get   func(T) (starlark.Value, error)
	// only, if set, says whether a value has the attribute at all (a
	// checkpoint has its run's details only from checkpoint.info).
	only func(T) bool
}

// read is the attribute's value for v.
func (a attr[T]) read(v T) (starlark.Value, error) {
	if a.value != nil {
		return a.value(v), nil
	}
	return a.get(v)
}

// attrTable is the attributes of one value type.
type attrTable[T any] []attr[T]

// names is AttrNames: the attributes v has, sorted.
func (t attrTable[T]) names(v T) []string {
	out := make([]string, 0, len(t))
	for _, a := range t {
		if a.only == nil || a.only(v) {
			out = append(out, a.name)
		}
	}
	sort.Strings(out)
	return out
}

// get is Attr: the attribute's value, or nil, nil when v has none of that
// name (Starlark then reports the missing attribute).
func (t attrTable[T]) get(v T, name string) (starlark.Value, error) {
	for _, a := range t {
		if a.name == name && (a.only == nil || a.only(v)) {
			return a.read(v)
		}
	}
	return nil, nil
}

// docs is the table's help lines, for typeDocs.
func (t attrTable[T]) docs() []attrDoc {
	out := make([]attrDoc, len(t))
	for i, a := range t {
		out[i] = attrDoc{a.name, a.doc}
	}
	return out
}
