package builtins

import (
	"fmt"
	"sort"
	"strings"
	"time"
	gotime "time"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/render"
	starlarktime "go.starlark.net/lib/time"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// coreBuiltins are the builtins core.go defines (registryParts lists them).
var coreBuiltins = []entry{
	{docEntry{
		Name:      "table",
		Signature: "table(rows, columns=None, title=None)",
		Summary:   "Make a table value from a list of dicts, structs or tinker records.",
		Details:   "Columns default to the keys of the first row, in order, plus any new keys of later rows. Missing cells show as —. Numeric columns are right-aligned.",
		Example:   `table([{"run": r.training_run_id, "rank": r.lora_rank} for r in run.list()], title="ranks")`,
	}, tableFn},
	{docEntry{
		Name:      "exit",
		Signature: "exit(code=0)",
		Summary:   "Stop the program with an exit status (0-255); at the prompt, leave the shell.",
		Example:   `if not checkpoint.list(): exit(3)`,
	}, exitFn},
	{docEntry{
		Name:      "version",
		Signature: "version()",
		Summary:   "The tinker version string.",
		Example:   `version()`,
	}, versionFn},
	{docEntry{
		Name:      "help",
		Signature: "help(x=None)",
		Summary:   "List every builtin, or document one: a builtin or module with its signature and an example, a value with its attributes.",
		Example:   "help(checkpoint.list)\nhelp(\"checkpoint\")\nhelp(\"sample_result\")",
	}, nil}, // Universe binds helpFn: a reference from this table would make the registry refer to itself
	{docEntry{
		Name:      "print",
		Signature: "print(*args, sep=\" \", stderr=False)",
		Summary:   "Print values; a lone table or record value prints as the table the prompt would show; stderr=True prints to stderr (usage and error messages).",
		Example:   "print(checkpoint.list())\nprint(\"usage: tinker my.star RUN_ID\", stderr=True)",
	}, nil},
}

func versionFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	return starlark.String(envOf(thread).Version), nil
}

// tableValue is a user-made table.
type tableValue struct {
	title   string
	columns []string
	rows    [][]starlark.Value
}

var (
	_ Tabular   = (*tableValue)(nil)
	_ JSONValue = (*tableValue)(nil)
)

func (t *tableValue) String() string {
	return fmt.Sprintf("<table %s × %s>", ops.Count(len(t.rows), "row", "rows"), ops.Count(len(t.columns), "column", "columns"))
}
func (t *tableValue) Type() string          { return "table" }
func (t *tableValue) Freeze()               {}
func (t *tableValue) Truth() starlark.Bool  { return len(t.rows) > 0 }
func (t *tableValue) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: table") }
func (t *tableValue) Len() int              { return len(t.rows) }

func (t *tableValue) AttrNames() []string                      { return tableAttrs.names(t) }
func (t *tableValue) Attr(name string) (starlark.Value, error) { return tableAttrs.get(t, name) }

var tableAttrs = attrTable[*tableValue]{
	{name: "columns", doc: "the column names, in order", value: func(t *tableValue) starlark.Value {
		l := make([]starlark.Value, len(t.columns))
		for i, c := range t.columns {
			l[i] = starlark.String(c)
		}
		return starlark.NewList(l)
	}},
	{name: "rows", doc: "one list of cells per row", value: func(t *tableValue) starlark.Value {
		l := make([]starlark.Value, len(t.rows))
		for i, r := range t.rows {
			l[i] = starlark.NewList(append([]starlark.Value(nil), r...))
		}
		return starlark.NewList(l)
	}},
	{name: "title", doc: "the title, or an empty string", value: func(t *tableValue) starlark.Value { return starlark.String(t.title) }},
}

// MarshalJSON makes json.encode(t) give a list of objects.
func (t *tableValue) MarshalJSON() ([]byte, error) { return marshalJSON(t) }

// Table implements Tabular. A table without columns (table([])) draws
// its title and "(no rows)".
func (t *tableValue) Table(now time.Time) *render.Table {
	if len(t.columns) == 0 {
		return &render.Table{Title: t.title}
	}
	out := &render.Table{Title: t.title}
	numeric := make([]bool, len(t.columns))
	for i := range numeric {
		numeric[i] = true
	}
	for _, r := range t.rows {
		cells := make([]string, len(t.columns))
		for i, v := range r {
			cells[i] = cellText(v)
			switch v.(type) {
			case starlark.Int, starlark.Float, nil, starlark.NoneType:
			default:
				numeric[i] = false
			}
		}
		out.Rows = append(out.Rows, cells)
	}
	for i, c := range t.columns {
		out.Columns = append(out.Columns, render.Column{Header: c, Right: numeric[i] && len(t.rows) > 0})
	}
	return out
}

// JSON implements JSONValue: a list of objects.
func (t *tableValue) JSON() any {
	l := make([]any, len(t.rows))
	for i, r := range t.rows {
		obj := make(render.Object, 0, len(t.columns))
		for j, c := range t.columns {
			var v any
			if r[j] != nil {
				v, _ = ToJSON(r[j])
			}
			obj = append(obj, render.Member{Key: c, Value: v})
		}
		l[i] = obj
	}
	return l
}

// cellText formats a Starlark value for a table cell.
func cellText(v starlark.Value) string {
	switch x := v.(type) {
	case nil, starlark.NoneType:
		return render.Missing
	case starlark.String:
		return string(x)
	case starlark.Float:
		return render.PyFloat(float64(x))
	case starlarktime.Time:
		return gotime.Time(x).UTC().Format("2006-01-02 15:04:05")
	}
	return v.String()
}

func tableFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var rows starlark.Iterable
	var columns *starlark.List
	var title string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "rows", &rows, "columns?", &columns, "title?", &title); err != nil {
		return nil, err
	}
	t := &tableValue{title: title}
	var records []func(string) (starlark.Value, bool)
	var keys []string
	seen := map[string]bool{}
	addKey := func(k string) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	now := envOf(thread).Clock()
	iter := rows.Iterate()
	defer iter.Done()
	var x starlark.Value
	for i := 0; iter.Next(&x); i++ {
		switch r := x.(type) {
		case *starlark.Dict:
			for _, item := range r.Items() {
				k, ok := starlark.AsString(item[0])
				if !ok {
					return nil, fmt.Errorf("table: row %d has a non-string key %s; use string keys", i, item[0])
				}
				addKey(k)
			}
			records = append(records, func(k string) (starlark.Value, bool) {
				v, found, _ := r.Get(starlark.String(k))
				return v, found
			})
		case RecordValue:
			cols := r.RowColumns()
			cells := r.Row(now)
			m := map[string]starlark.Value{}
			for j, c := range cols {
				addKey(c.Header)
				m[c.Header] = starlark.String(cells[j])
			}
			records = append(records, func(k string) (starlark.Value, bool) { v, ok := m[k]; return v, ok })
		case starlark.HasAttrs:
			names := r.AttrNames()
			if _, isStruct := r.(*starlarkstruct.Struct); !isStruct {
				sort.Strings(names)
			}
			for _, n := range names {
				addKey(n)
			}
			records = append(records, func(k string) (starlark.Value, bool) {
				v, err := r.Attr(k)
				return v, err == nil && v != nil
			})
		default:
			return nil, fmt.Errorf("table: row %d is %s %s; rows must be dicts, structs or records", i, article(x.Type()), x.Type())
		}
	}
	if columns != nil {
		keys = keys[:0]
		for i := 0; i < columns.Len(); i++ {
			s, ok := starlark.AsString(columns.Index(i))
			if !ok {
				return nil, fmt.Errorf("table: columns must be strings, got %s", columns.Index(i).Type())
			}
			keys = append(keys, s)
		}
	}
	t.columns = keys
	for _, get := range records {
		row := make([]starlark.Value, len(keys))
		for j, k := range keys {
			if v, ok := get(k); ok {
				row[j] = v
			} else {
				row[j] = starlark.None
			}
		}
		t.rows = append(t.rows, row)
	}
	return t, nil
}

// helpText is the value help() returns; it displays as plain text.
type helpText string

var _ TextValue = helpText("")

func (h helpText) String() string        { return string(h) }
func (h helpText) Type() string          { return "help" }
func (h helpText) Freeze()               {}
func (h helpText) Truth() starlark.Bool  { return true }
func (h helpText) Hash() (uint32, error) { return starlark.String(h).Hash() }
func (h helpText) Text() string          { return string(h) }

func helpFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x starlark.Value = starlark.None
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "x?", &x); err != nil {
		return nil, err
	}
	name := ""
	switch v := x.(type) {
	case starlark.NoneType:
		return helpText(overview()), nil
	case starlark.String:
		name = string(v)
	case *starlark.Builtin:
		name = v.Name()
	case module:
		name = v.Name
		if _, registered := findModule(name); registered {
			if text, ok := helpFor(name); ok {
				members := v.members()
				names := make([]string, 0, len(members))
				for k := range members {
					names = append(names, name+"."+k)
				}
				sort.Strings(names)
				if !strings.Contains(text, "\n  ") {
					text = strings.TrimRight(text, "\n")
					text += "\n\n  " + strings.Join(names, "\n  ")
				}
				return helpText(text), nil
			}
		}
	case *starlark.Function:
		return helpText(fmt.Sprintf("%s: a function defined at %s", v.Name(), v.Position())), nil
	default:
		if t, ok := lookupTypeDoc(x.Type()); ok {
			return helpText(helpForType(t)), nil
		}
		return nil, fmt.Errorf("help: no documentation for %s %s; try help() for the list", article(x.Type()), x.Type())
	}
	if text, ok := helpFor(name); ok {
		return helpText(text), nil
	}
	if t, ok := lookupTypeDoc(name); ok {
		return helpText(helpForType(t)), nil
	}
	return nil, fmt.Errorf("help: no builtin or module named %q; try help() for the list", name)
}

// overview lists every builtin and module, one line each.
func overview() string {
	var b strings.Builder
	b.WriteString("tinker builtins (help(name) for details):\n\n")
	width := 0
	docs := allDocs()
	for _, d := range docs {
		if !strings.Contains(d.Name, ".") && len(d.Name) > width {
			width = len(d.Name)
		}
	}
	for _, d := range docs {
		if !strings.Contains(d.Name, ".") {
			fmt.Fprintf(&b, "  %-*s  %s\n", width, d.Name, d.Summary)
		}
	}
	b.WriteString("\nmodules:\n\n")
	for _, m := range moduleList() {
		fmt.Fprintf(&b, "  %-10s  %s\n", m.Name, m.Summary)
		for _, d := range docs {
			if strings.HasPrefix(d.Name, m.Name+".") {
				fmt.Fprintf(&b, "    %s\n", d.Signature)
			}
		}
	}
	b.WriteString("\nvalues (help(a value) lists its attributes):\n\n")
	names := make([]string, len(typeDocs.Get()))
	for i, t := range typeDocs.Get() {
		names[i] = t.Name
	}
	b.WriteString(wrapWords(names, 76, "  "))
	fmt.Fprintf(&b, "\n\nModels: models() lists the base models the backend serves; the local server (--local)\n"+
		"runs %s and %s with no download\n(random weights, to try things out).", models.TinyLlama, models.TinyQwen3)
	b.WriteString("\n\nAlso: the Starlark language builtins (len, sorted, range, fail, ...) and `struct`.")
	return b.String()
}

// helpFor documents one builtin or module by name.
func helpFor(name string) (string, bool) {
	if d, ok := lookupDoc(name); ok {
		var b strings.Builder
		b.WriteString(d.Signature + "\n\n    " + d.Summary + "\n")
		if details := d.details(); details != "" {
			b.WriteString("\n    " + strings.ReplaceAll(details, "\n", "\n    ") + "\n")
		}
		if d.Example != "" {
			b.WriteString("\nExample:\n    " + strings.ReplaceAll(d.Example, "\n", "\n    ") + "\n")
		}
		return strings.TrimRight(b.String(), "\n"), true
	}
	if m, ok := findModule(name); ok {
		var b strings.Builder
		fmt.Fprintf(&b, "module %s: %s\n", m.Name, m.Summary)
		for _, d := range allDocs() {
			if strings.HasPrefix(d.Name, name+".") {
				fmt.Fprintf(&b, "\n  %s\n      %s", d.Signature, d.Summary)
			}
		}
		return b.String(), true
	}
	return "", false
}
