package main

import (
	"debug/elf"
	"fmt"
	"path/filepath"
	"regexp"
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
	initCodeBudget       = 6 << 10 // all packages
	initCodePackageLimit = 2 << 10 // any one package
	initPackagesLimit    = 8       // packages with any init code
)

// TestOwnInitCodeStaysSmall builds tinker and sums the sizes of this
// module's init functions. The builtins' attribute tables and registry,
// filled by calls, once made 27 KB of it (60 KB in 16 packages).
func TestOwnInitCodeStaysSmall(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the ELF symbol table")
	}
	module, err := goOutput("list", "-m")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "tinker")
	// Not -ldflags=-s: the symbol table is what is read.
	if _, err := goOutput("build", "-trimpath", "-o", bin, module+"/cmd/tinker"); err != nil {
		t.Fatal(err)
	}
	perPkg, err := initCodeSizes(bin, module)
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

// initName matches the functions that run at start: pkg.init, pkg.init.N
// (func init), pkg.map.init.N (a package-level map); not pkg.init.funcN,
// closures that only run when called.
var initName = regexp.MustCompile(`^(.*?)\.(init|init\.\d+|map\.init\.\d+)$`)

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
		m := initName.FindStringSubmatch(s.Name)
		if m == nil || elf.ST_TYPE(s.Info) != elf.STT_FUNC || !strings.HasPrefix(m[1], module+"/") {
			continue
		}
		out[m[1]] += int(s.Size)
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
