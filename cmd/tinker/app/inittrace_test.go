package app

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Every package linked into tinker initialises at every start, so work done
// in a package-level var or init() is paid by `tinker -c '1+1'` and each
// subcommand whether or not it is used. These budgets bound the heap that
// initialisation allocates (GODEBUG=inittrace=1, which counts bytes and
// allocations, not time): a regexp compile or a built table blows them.
const (
	// modulePkgInitBudget bounds each of this module's packages.
	modulePkgInitBudget = 8 << 10
	// moduleInitTotalBudget bounds this module's packages together.
	moduleInitTotalBudget = 16 << 10
	// staticPkgInitBudget bounds the packages in staticPkgs.
	staticPkgInitBudget = 512
	// totalInitBudget bounds all packages together, dependencies included.
	totalInitBudget = 176 << 10
)

// modulePkgInitBudgets are the packages allowed more, and why.
var modulePkgInitBudgets = map[string]int{}

// staticPkgs keep their package-level tables as static data (the command
// table, the model lineup, the loss-function table, the styles made on
// first use, the builtins' registry and attribute tables, the renderers'
// tables): a map literal, an append or a fmt call in a package-level
// var would put work back into every start. This package's figure includes
// its test files' package-level vars.
var staticPkgs = []string{
	"github.com/tinkershell/tinker/builtins",
	"github.com/tinkershell/tinker/cmd/tinker/app",
	"github.com/tinkershell/tinker/lib/archive",
	"github.com/tinkershell/tinker/lib/chat",
	"github.com/tinkershell/tinker/lib/console",
	"github.com/tinkershell/tinker/lib/models",
	"github.com/tinkershell/tinker/lib/render",
	"github.com/tinkershell/tinker/lib/server",
	"github.com/tinkershell/tinker/lib/tinkerapi",
	"github.com/tinkershell/tinker/lib/tokenizer",
	"github.com/tinkershell/tinker/lib/train",
	"github.com/tinkershell/tinker/shell",
}

// unlinkedPrefixes are dependencies whose initialisation tinker must not
// pay at all: tests use them as references, the binary does without.
var unlinkedPrefixes = []string{
	"google.golang.org/protobuf/", // lib/tinkerproto encodes the wire messages itself
	"github.com/klauspost/",       // lib/zstd is the zstd codec (docs/zstd.md)
	"golang.org/x/sys/cpu",        // lib/cpufeat: its init's CPUIDs trap in a VM
	"github.com/dlclark/",         // lib/tokenizer's hand-written matchers; regexp2 is their oracle
	// The local server and what only it needs live in tinker-local.
	"modernc.org/",
	module + "/cmd/tinker/localserver",
	module + "/lib/server",
	module + "/lib/store",
	module + "/lib/console",
}

// TestBinaryLinksNoUnlinkedPrefix checks tinker's package list, not only
// the initialisers that run: a dependency dropped for its start cost must
// not come back through another import.
func TestBinaryLinksNoUnlinkedPrefix(t *testing.T) {
	pkgs := goListDeps(t, module+"/cmd/tinker")
	if len(pkgs) < 100 {
		t.Fatalf("go list -deps named %d packages; has its output changed?", len(pkgs))
	}
	for _, pkg := range pkgs {
		for _, p := range unlinkedPrefixes {
			if strings.HasPrefix(pkg, p) {
				t.Errorf("tinker links %s: every start would pay its initialisation", pkg)
			}
		}
	}
}

// goListDeps is pkg and every package it links, as `make build` builds it.
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

type initCost struct {
	pkg           string
	bytes, allocs int
}

func TestInitAllocationBudget(t *testing.T) {
	// This test binary links the local server too (local_test.go), as
	// tinker-local does; tinker's start is what the budget is for.
	linked := goListDeps(t, module+"/cmd/tinker")
	costs := slices.DeleteFunc(initCosts(t), func(c initCost) bool { return !slices.Contains(linked, c.pkg) })
	total, module := 0, 0
	for _, c := range costs {
		total += c.bytes
		for _, p := range unlinkedPrefixes {
			if strings.HasPrefix(c.pkg, p) {
				t.Errorf("%s initialises at every start: the binary should not link it", c.pkg)
			}
		}
		if !strings.HasPrefix(c.pkg, "github.com/tinkershell/tinker/") {
			continue
		}
		module += c.bytes
		budget, ok := modulePkgInitBudgets[c.pkg]
		if !ok {
			budget = modulePkgInitBudget
		}
		if slices.Contains(staticPkgs, c.pkg) {
			budget = staticPkgInitBudget
		}
		if c.bytes > budget {
			t.Errorf("initialising %s allocates %d bytes in %d allocations (budget %d): make package-level work lazy "+
				"(lazyre.New for patterns, lazy.Value for the rest)", c.pkg, c.bytes, c.allocs, budget)
		}
	}
	if module > moduleInitTotalBudget {
		t.Errorf("initialising this module's packages allocates %d bytes (budget %d)", module, moduleInitTotalBudget)
	}
	if total > totalInitBudget {
		t.Errorf("initialising all packages allocates %d bytes (budget %d); the largest:\n%s", total, totalInitBudget, largest(costs, 8))
	}
}

// initCosts runs this test binary again with GODEBUG=inittrace=1 and no
// tests, and reads each package's initialisation cost from its stderr.
func initCosts(t *testing.T) []initCost {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	var out []initCost
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		if c, ok := parseInitTrace(sc.Text()); ok {
			out = append(out, c)
		}
	}
	if len(out) < 50 {
		t.Fatalf("read %d init lines from GODEBUG=inittrace=1; has its format changed?\n%s", len(out), stderr.String())
	}
	return out
}

// parseInitTrace reads "init PKG @0.5 ms, 0.01 ms clock, 1024 bytes, 9 allocs".
func parseInitTrace(line string) (initCost, bool) {
	f := strings.Fields(line)
	if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
		return initCost{}, false
	}
	b, err1 := strconv.Atoi(f[7])
	a, err2 := strconv.Atoi(f[9])
	return initCost{f[1], b, a}, err1 == nil && err2 == nil
}

func largest(costs []initCost, n int) string {
	s := append([]initCost(nil), costs...)
	for i := range s { // a partial selection sort: n is small
		for j := i + 1; j < len(s); j++ {
			if s[j].bytes > s[i].bytes {
				s[i], s[j] = s[j], s[i]
			}
		}
		if i == n {
			s = s[:n]
			break
		}
	}
	var b strings.Builder
	for _, c := range s {
		fmt.Fprintf(&b, "  %8d bytes %5d allocs  %s\n", c.bytes, c.allocs, c.pkg)
	}
	return b.String()
}
