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
			if d.Example != "" {
				fmt.Fprintf(&b, " Example: `%s`", strings.ReplaceAll(d.Example, "\n", "; "))
			}
			b.WriteString("\n")
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
	b.WriteString("Also available: the Starlark language builtins, `struct(...)`, and the standard `json`, `time` and `math` modules.\n")
	return b.String()
}
