package app

import (
	"debug/elf"
	"go/parser"
	"go/token"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDependencyInitsComeFirst checks what cmd/tinker/layout.go is for:
// the dependencies' initialisers, which run at every start, are laid out
// ahead of this module's code rather than spread through it (a page fault
// for each 64 KB stretch they touch). Without layout.go 165 of 209 came
// after this module's first function. The FIPS module's packages are left
// out: the linker gives them a stretch of their own at the end. It also
// checks that layout.go names only packages tinker links anyway.
func TestDependencyInitsComeFirst(t *testing.T) {
	syms := binarySymbols(t)
	ownStart := ^uint64(0)
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && strings.HasPrefix(s.Name, module+"/") {
			ownStart = min(ownStart, s.Value)
		}
	}
	var before, late []string
	for _, s := range syms {
		pkg, ok := initPkg(s.Name)
		if !ok || elf.ST_TYPE(s.Info) != elf.STT_FUNC || strings.HasPrefix(pkg, module+"/") || strings.Contains(pkg, "crypto/internal/fips140") {
			continue
		}
		if s.Value < ownStart {
			before = append(before, s.Name)
		} else {
			late = append(late, s.Name)
		}
	}
	if len(before)+len(late) < 100 {
		t.Fatalf("found %d dependency init functions; has the symbol naming changed?", len(before)+len(late))
	}
	if len(late)*20 > len(before)+len(late) {
		t.Errorf("%d of %d dependency init functions come after this module's first function (over 5%%): name their packages in cmd/tinker/layout.go\n%s",
			len(late), len(before)+len(late), strings.Join(late, "\n"))
	}
	checkLayoutImportsLinked(t)
}

// checkLayoutImportsLinked fails for a package layout.go names that the
// rest of tinker does not import: there it would add a package, and its
// initialisation, to every start.
func checkLayoutImportsLinked(t *testing.T) {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), "../layout.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	deps := goListDeps(t, module+"/cmd/tinker/app")
	for _, imp := range file.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(deps, path) {
			t.Errorf("cmd/tinker/layout.go imports %s, which nothing else in tinker does: drop it", path)
		}
	}
}

// binarySymbols builds tinker with its symbol table (buildWithSymbols) and
// returns the ELF symbols; off Linux the test is skipped.
func binarySymbols(t *testing.T) []elf.Symbol {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads the ELF symbol table")
	}
	f, err := elf.Open(buildWithSymbols(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	return syms
}
