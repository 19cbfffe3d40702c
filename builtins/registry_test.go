package builtins

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRegistryListsEveryTable keeps registryParts complete: every builtin
// written in a `var xBuiltins = []entry{...}` table of this package's
// sources is registered exactly once, and nothing else is. A table left
// out of registryParts would compile and silently drop its builtins.
func TestRegistryListsEveryTable(t *testing.T) {
	declared := declaredBuiltins(t)
	var registered []string
	for e := range registry {
		registered = append(registered, e.doc.Name)
	}
	slices.Sort(declared)
	slices.Sort(registered)
	if len(declared) < 40 {
		t.Fatalf("found only %d builtins in the sources: the test no longer reads the tables", len(declared))
	}
	if !slices.Equal(declared, registered) {
		t.Errorf("the sources' []entry tables declare %d builtins, registry yields %d: list every table in registryParts\ndeclared:   %q\nregistered: %q",
			len(declared), len(registered), declared, registered)
	}
	if c := slices.Compact(slices.Clone(registered)); len(c) != len(registered) {
		t.Errorf("a builtin is registered twice: %q", registered)
	}
}

// declaredBuiltins are the Name fields of the docEntry literals in this
// package's []entry tables.
func declaredBuiltins(t *testing.T) []string {
	t.Helper()
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), ".go") || strings.HasSuffix(f.Name(), "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || !isEntrySlice(lit.Type) {
				return true
			}
			for _, el := range lit.Elts {
				names = append(names, entryName(t, fset, el))
			}
			return false
		})
	}
	return names
}

func isEntrySlice(e ast.Expr) bool {
	arr, ok := e.(*ast.ArrayType)
	if !ok {
		return false
	}
	id, ok := arr.Elt.(*ast.Ident)
	return ok && id.Name == "entry"
}

// entryName is the Name of one {docEntry{Name: ...}, fn} element.
func entryName(t *testing.T, fset *token.FileSet, el ast.Expr) string {
	if row, ok := el.(*ast.CompositeLit); ok && len(row.Elts) == 2 {
		if doc, ok := row.Elts[0].(*ast.CompositeLit); ok {
			for _, kv := range doc.Elts {
				kv, ok := kv.(*ast.KeyValueExpr)
				if !ok || kv.Key.(*ast.Ident).Name != "Name" {
					continue
				}
				if s, ok := kv.Value.(*ast.BasicLit); ok {
					name, err := strconv.Unquote(s.Value)
					if err == nil {
						return name
					}
				}
			}
		}
	}
	t.Fatalf("%s: an []entry element that is not {docEntry{Name: \"...\", ...}, fn}", fset.Position(el.Pos()))
	return ""
}
