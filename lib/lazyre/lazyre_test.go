package lazyre

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestCompiledOnceAndShared(t *testing.T) {
	re := New(`^model\.layers\.(\d+)\.`)
	if re.Compiled() != re.Compiled() {
		t.Fatal("Compiled returned two different regexps")
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if m := re.FindStringSubmatch("model.layers.12.mlp"); len(m) != 2 || m[1] != "12" {
				t.Errorf("FindStringSubmatch = %q", m)
			}
		}()
	}
	wg.Wait()
	if !re.MatchString("model.layers.3.x") || re.Match([]byte("lm_head")) {
		t.Error("Match/MatchString disagree with the pattern")
	}
	if got := New(`(a+)b`).ReplaceAllString("aab xab", "<$1>"); got != "<aa> x<a>" {
		t.Errorf("ReplaceAllString = %q", got)
	}
	if got := New(`b+`).ReplaceAllStringFunc("abbc", strings.ToUpper); got != "aBBc" {
		t.Errorf("ReplaceAllStringFunc = %q", got)
	}
}

func TestBadPatternPanicsOnFirstUse(t *testing.T) {
	re := New(`(`) // no panic here: nothing compiles at declaration
	defer func() {
		if recover() == nil {
			t.Error("a bad pattern did not panic on use")
		}
	}()
	re.MatchString("x")
}

// TestNoPackageLevelCompile keeps regexp compiles out of package
// initialisation across the module: a package-level var whose value
// compiles a pattern (regexp or regexp2) outside a function literal runs in
// every tinker start.
func TestNoPackageLevelCompile(t *testing.T) {
	root := filepath.Join("..", "..")
	var bad []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		found, err := packageLevelCompiles(path)
		bad = append(bad, found...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("%s: package-level regexp compile runs at every start; use lazyre.New", b)
	}
}

// packageLevelCompiles lists the package-level var initialisers in file
// that call a regexp package's Compile functions directly.
func packageLevelCompiles(file string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	pkgs := regexpImports(f)
	if len(pkgs) == 0 {
		return nil, nil
	}
	var out []string
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		ast.Inspect(gd, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.FuncLit:
				return false // runs when called, not at init
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && pkgs[id.Name] && strings.Contains(x.Sel.Name, "Compile") {
					out = append(out, fset.Position(x.Pos()).String())
				}
			}
			return true
		})
	}
	return out, nil
}

// regexpImports is the set of names under which file imports regexp or
// regexp2.
func regexpImports(f *ast.File) map[string]bool {
	names := map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if p != "regexp" && p != "github.com/dlclark/regexp2" {
			continue
		}
		name := filepath.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = true
	}
	return names
}
