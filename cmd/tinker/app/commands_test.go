package app

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// flagReaders are the invocation methods that read a flag by name.
var flagReaders = map[string]bool{"str": true, "has": true, "intOr": true, "multi": true, "float": true}

// TestFlagReadsAreDeclared reads the package's source: every flag a
// command's Run or API function reads, directly or through the package's
// functions it calls, must be declared by that command. A misspelt flag
// name is caught here rather than read as "" at run time.
func TestFlagReadsAreDeclared(t *testing.T) {
	reads, calls := scanFlagReads(t)
	for _, n := range walk(root) {
		if n.cmd.isGroup() {
			continue
		}
		var fn any = n.cmd.Run
		if n.cmd.API != nil {
			fn = n.cmd.API
		}
		name := funcName(fn)
		declared := map[string]bool{}
		for _, f := range leafFlags(n.cmd) {
			declared[f.key()] = true
		}
		seen := map[string]bool{}
		var visit func(f string)
		visit = func(f string) {
			if seen[f] {
				return
			}
			seen[f] = true
			for _, flag := range reads[f] {
				if !declared[flag] {
					t.Errorf("tinker %s: %s reads --%s, which the command does not declare", strings.Join(n.words, " "), f, flag)
				}
			}
			for _, g := range calls[f] {
				visit(g)
			}
		}
		if _, ok := reads[name]; !ok && calls[name] == nil {
			t.Errorf("tinker %s: run function %s not found in the source", strings.Join(n.words, " "), name)
		}
		visit(name)
	}
}

// The check above needs something to find: the sample command's reads.
func TestScanFindsFlagReads(t *testing.T) {
	reads, _ := scanFlagReads(t)
	got := strings.Join(reads["runSample"], " ")
	for _, want := range []string{"base-model", "model-path", "temperature", "stop", "prompt-file"} {
		if !strings.Contains(got, want) {
			t.Errorf("runSample reads %q; the scan missed --%s", got, want)
		}
	}
}

// scanFlagReads parses the package and returns, per function or method
// name, the flag names it reads and the package functions it calls.
func scanFlagReads(t *testing.T) (reads, calls map[string][]string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	reads, calls = map[string][]string{}, map[string][]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			name := fd.Name.Name
			if _, ok := reads[name]; !ok {
				reads[name] = nil // known, even if it reads no flag
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.CallExpr:
					sel, ok := x.Fun.(*ast.SelectorExpr)
					if ok && flagReaders[sel.Sel.Name] && len(x.Args) > 0 {
						if fd.Recv != nil && name == "values" || flagReaders[name] {
							return true // the readers themselves pass the name on
						}
						lit, ok := x.Args[0].(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							t.Errorf("%s: %s reads a flag by a computed name; use a literal so it can be checked", fset.Position(x.Pos()), name)
							return true
						}
						s, _ := strconv.Unquote(lit.Value)
						reads[name] = append(reads[name], s)
					}
				case *ast.Ident:
					calls[name] = append(calls[name], x.Name) // functions called or passed on
				}
				return true
			})
		}
	}
	return reads, calls
}

// funcName is the name of a package-level function value.
func funcName(fn any) string {
	full := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	return full[strings.LastIndex(full, ".")+1:]
}
