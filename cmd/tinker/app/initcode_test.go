package app

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// Budgets for the code this module's packages run at every start (their
// init functions, which the compiler writes for package-level variables it
// cannot lay out as data, and for func init). A table built by calls
// (field(...), register(...), a constructor per row), a package-level map
// or sync.OnceValue costs its code at every start, and each package with
// any init code costs a page fault to reach it (~1-2% of tinker -c's
// start for ten packages); a literal costs nothing. Write tables as
// literals, small maps as switches, and values made on first use as
// lazy.Values.
const (
	initCodeBudget       = 512 // all packages
	initCodePackageLimit = 384 // any one package
	// initPackagesLimit: packages with any init code. Only lib/engine
	// has some (311 bytes: its CPU-feature switches, which tests flip,
	// spread over files other kernels' owners keep, and workPool; its
	// expert-name map, AMX tile table and tile-height arrays became a
	// switch, a literal and functions, and attention's exp constants a
	// literal: 970 bytes before); quant, jsonscan
	// and export had theirs turned into functions, a literal table and
	// switches (3 init functions, each reached through a page fault:
	// ~14 µs a start by inittrace).
	initPackagesLimit = 1
)

// TestOwnInitCodeStaysSmall builds tinker and sums the sizes of this
// module's init functions. The builtins' attribute tables and registry,
// filled by calls, once made 27 KB of it (60 KB in 16 packages).
// TestInitAllocationBudget bounds what the same code allocates.
func TestOwnInitCodeStaysSmall(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the ELF symbol table")
	}
	perPkg, err := initCodeSizes(buildWithSymbols(t), module)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range perPkg {
		total += n
	}
	if total > initCodeBudget {
		t.Errorf("this module's init functions are %d bytes, over the budget of %d:\n%s", total, initCodeBudget, listSizes(perPkg))
	}
	if len(perPkg) > initPackagesLimit {
		t.Errorf("%d of this module's packages run code at start, over %d:\n%s", len(perPkg), initPackagesLimit, listSizes(perPkg))
	}
	for pkg, n := range perPkg {
		if n > initCodePackageLimit {
			t.Errorf("%s's init functions are %d bytes, over %d: make its tables literals or build them on first use", pkg, n, initCodePackageLimit)
		}
	}
	t.Logf("init code: %d bytes\n%s", total, listSizes(perPkg))
}

// module is this module's path, the prefix of its packages and symbols.
const module = "github.com/tinkershell/tinker"

// buildWithSymbols builds tinker as make build does, but keeping the
// symbol table, which is what these tests read.
func buildWithSymbols(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tinker")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, module+"/cmd/tinker")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return bin
}

// initPkg is the package of an init function: pkg.init, pkg.init.N (func
// init), pkg.map.init.N (a package-level map); not pkg.init.funcN, closures
// that only run when called. (No regexp here: a package-level pattern in a
// test file would count against this package in TestInitAllocationBudget.)
func initPkg(sym string) (string, bool) {
	if pkg, ok := strings.CutSuffix(sym, ".init"); ok {
		return pkg, true
	}
	i := strings.LastIndexByte(sym, '.')
	if i < 0 || strings.Trim(sym[i+1:], "0123456789") != "" || i+1 == len(sym) {
		return "", false
	}
	head := sym[:i]
	if pkg, ok := strings.CutSuffix(head, ".map.init"); ok {
		return pkg, true
	}
	return strings.CutSuffix(head, ".init")
}

// initCodeSizes is the size of module's init functions in bin, by package.
func initCodeSizes(bin, module string) (map[string]int, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", bin, err)
	}
	out := map[string]int{}
	for _, s := range syms {
		pkg, ok := initPkg(s.Name)
		if !ok || elf.ST_TYPE(s.Info) != elf.STT_FUNC || !strings.HasPrefix(pkg, module+"/") {
			continue
		}
		out[pkg] += int(s.Size)
	}
	return out, nil
}

func listSizes(perPkg map[string]int) string {
	pkgs := make([]string, 0, len(perPkg))
	for p := range perPkg {
		pkgs = append(pkgs, p)
	}
	sort.Slice(pkgs, func(i, j int) bool { return perPkg[pkgs[i]] > perPkg[pkgs[j]] })
	var b strings.Builder
	for _, p := range pkgs {
		fmt.Fprintf(&b, "%7d %s\n", perPkg[p], p)
	}
	return b.String()
}

func TestInitPkg(t *testing.T) {
	for sym, want := range map[string]string{
		"example.com/m/lib/a.init": "example.com/m/lib/a", "example.com/m/lib/a.init.3": "example.com/m/lib/a",
		"example.com/m/lib/a.map.init.0": "example.com/m/lib/a", "example.com/m/lib/a.init.func2": "",
		"example.com/m/lib/a.initTables": "", "example.com/m/lib/a.f.init": "example.com/m/lib/a.f", "x.init.": "",
	} {
		got, ok := initPkg(sym)
		if got != want || ok != (want != "") {
			t.Errorf("initPkg(%q) = %q, %v; want %q", sym, got, ok, want)
		}
	}
}
