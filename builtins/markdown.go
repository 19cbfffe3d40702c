package builtins

import (
	"fmt"
	"strings"
)

// Markdown renders the builtin reference for the README from the same
// table help() reads.
func Markdown() string {
	var b strings.Builder
	docs := allDocs()
	section := func(title string, keep func(docEntry) bool) {
		fmt.Fprintf(&b, "#### %s\n\n", title)
		for _, d := range docs {
			if !keep(d) {
				continue
			}
			fmt.Fprintf(&b, "- `%s` — %s", d.Signature, d.Summary)
			switch {
			case strings.Contains(d.Example, "\n"):
				// Several lines stay lines: joined with "; " a block such as
				// a for loop would no longer be valid Starlark.
				fmt.Fprintf(&b, " Example:\n\n  ```python\n  %s\n  ```\n", strings.ReplaceAll(d.Example, "\n", "\n  "))
			case d.Example != "":
				fmt.Fprintf(&b, " Example: `%s`\n", d.Example)
			default:
				b.WriteString("\n")
			}
		}
		b.WriteString("\n")
	}
	section("Functions", func(d docEntry) bool { return !strings.Contains(d.Name, ".") })
	for _, m := range moduleList() {
		name := m.Name
		has := false
		for _, d := range docs {
			if strings.HasPrefix(d.Name, name+".") {
				has = true
			}
		}
		if !has {
			continue
		}
		section(fmt.Sprintf("`%s` — %s", name, m.Summary), func(d docEntry) bool { return strings.HasPrefix(d.Name, name+".") })
	}
	b.WriteString("#### Values\n\nWhat the builtins return; `help(value)` lists a value's attributes with a line on each.\n\n")
	for _, t := range typeDocs.Get() {
		fmt.Fprintf(&b, "- `%s` — %s", t.Name, t.Summary)
		if len(t.Attrs) > 0 {
			names := make([]string, 0, len(t.Attrs))
			for _, a := range sortedAttrs(t) {
				names = append(names, "`"+a.Name+"`")
			}
			fmt.Fprintf(&b, " Attributes: %s.", strings.Join(names, ", "))
		}
		b.WriteString("\n")
	}
	b.WriteString("\nAlso available: the Starlark language builtins, `struct(...)`, and the standard `json`, `time` and `math` modules.\n")
	return b.String()
}

// DocExample is one builtin's example from the doc table.
type DocExample struct {
	Name  string // the builtin
	Code  string // Starlark, one or more lines
	Needs string // what it needs beyond the local server, or ""
	// Learns is a condition that must hold after Code (see docEntry).
	Learns string
}

// Examples lists every builtin's example, for the test that runs them.
func Examples() []DocExample {
	var out []DocExample
	for _, d := range allDocs() {
		if d.Example != "" {
			out = append(out, DocExample{Name: d.Name, Code: d.Example, Needs: d.ExampleNeeds, Learns: d.Learns})
		}
	}
	return out
}
