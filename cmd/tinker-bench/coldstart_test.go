package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBuildFlagsMatchMakefile keeps the reference program's build in step
// with `make build`: a flag or setting on one side only would make the
// cold-start ratio measure the build, not the program.
func TestBuildFlagsMatchMakefile(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(mk), "\n") {
		if strings.Contains(l, "build") && strings.Contains(l, "-o $(BIN) ./cmd/tinker") {
			line = l
		}
	}
	if line == "" {
		t.Fatal("no `go build ... -o $(BIN) ./cmd/tinker` line in the Makefile")
	}
	want := append(append([]string{}, buildEnv...), "-trimpath", `-ldflags "-s -w"`)
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("make build's line %q lacks %q, which the reference program is built with", strings.TrimSpace(line), w)
		}
	}
	if got := strings.Join(buildFlags, " "); got != `-trimpath -ldflags=-s -w` {
		t.Errorf("buildFlags = %q: change the Makefile's build line and this test together", got)
	}
}

// TestFloorImports keeps in the floor program what a main package can
// import and tinker's build links, and leaves out the module's own
// packages, which are what the floor is measured against.
func TestFloorImports(t *testing.T) {
	deps := []string{"errors", "internal/cpu", "vendor/golang.org/x/net/idna", "unsafe", "C", "runtime/cgo",
		"github.com/klauspost/compress/internal/snapref", "github.com/klauspost/compress/zstd",
		"example.com/tinker", "example.com/tinker/lib/render", "example.com/tinkerish", "modernc.org/sqlite"}
	got := floorImports(deps, "example.com/tinker")
	want := []string{"errors", "github.com/klauspost/compress/zstd", "example.com/tinkerish", "modernc.org/sqlite"}
	if !slices.Equal(got, want) {
		t.Errorf("floorImports = %q, want %q", got, want)
	}
	src := floorSource(want)
	for _, p := range want {
		if !strings.Contains(src, "\t_ \""+p+"\"\n") {
			t.Errorf("floorSource lacks the import of %s:\n%s", p, src)
		}
	}
	if !strings.Contains(src, "func main() {}") {
		t.Errorf("floorSource's main is not empty:\n%s", src)
	}
}

// TestCopyInPages copies a program byte for byte, executable, and never
// over an existing file.
func TestCopyInPages(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	data := make([]byte, 3*4096+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := copyInPages(src, dst); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("copy differs (%d bytes, want %d; %v)", len(got), len(data), err)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("copy's mode = %v (%v), want 0755", fi.Mode(), err)
	}
	if err := copyInPages(src, dst); err == nil {
		t.Error("copyInPages replaced an existing file")
	}
}

// TestColdRunsTakeEachCopyAlike: the rounds cover the copies and
// balancedOrder's rows evenly, for one tinker or several.
func TestColdRunsTakeEachCopyAlike(t *testing.T) {
	if copiesPerProgram < 2 || copiesPerProgram%2 != 0 {
		t.Errorf("%d copies: writeCopies' turns balance only an even count", copiesPerProgram)
	}
	for _, minRuns := range []int{1, coldRuns, 301} {
		for bins := 1; bins <= 4; bins++ {
			n := 3 + 2*bins
			runs := coldRounds(n, minRuns)
			if runs < minRuns || runs%copiesPerProgram != 0 || runs%balancedRows(n) != 0 {
				t.Errorf("%d commands, at least %d runs: %d rounds do not take each copy and each order alike", n, minRuns, runs)
			}
			if step := copiesPerProgram * balancedRows(n); runs >= minRuns+step {
				t.Errorf("%d commands, at least %d runs: %d rounds, a whole cycle (%d) more than needed", n, minRuns, runs, step)
			}
		}
	}
}

// TestLeadingRounds: -rounds N is read only in front, and only as a
// positive count.
func TestLeadingRounds(t *testing.T) {
	for _, c := range []struct {
		args []string
		n    int
		rest []string
		bad  bool
	}{
		{args: []string{"bin/tinker"}, n: 7, rest: []string{"bin/tinker"}},
		{args: []string{"-rounds", "300", "a", "b"}, n: 300, rest: []string{"a", "b"}},
		{args: []string{"a", "-rounds", "300"}, n: 7, rest: []string{"a", "-rounds", "300"}},
		{args: []string{"-rounds", "0", "a"}, bad: true},
		{args: []string{"-rounds", "x", "a"}, bad: true},
		{args: []string{"-rounds"}, bad: true},
	} {
		n, rest, err := leadingRounds(c.args, 7)
		if (err != nil) != c.bad {
			t.Errorf("%q: error %v, want one: %v", c.args, err, c.bad)
			continue
		}
		if !c.bad && (n != c.n || !slices.Equal(rest, c.rest)) {
			t.Errorf("%q: %d rounds, rest %q; want %d, %q", c.args, n, rest, c.n, c.rest)
		}
	}
}

// TestColdCommandsRotateCopies: each round runs the next of a program's
// copies, which hold the program's bytes in files of their own.
func TestColdCommandsRotateCopies(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "prog")
	data := bytes.Repeat([]byte("tinker\x00"), 1500)
	if err := os.WriteFile(src, data, 0o755); err != nil {
		t.Fatal(err)
	}
	all, err := writeCopies([]string{src, src}, dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	copies := all[1]
	if len(copies) != 3 || copies[0] == copies[1] || copies[1] == copies[2] || copies[0] == copies[2] || slices.Contains(all[0], copies[0]) {
		t.Fatalf("copies = %q, want six distinct files", all)
	}
	for _, c := range slices.Concat(all...) {
		got, err := os.ReadFile(c)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s differs from the program (%d bytes, %v)", c, len(got), err)
		}
	}
	cmd := coldCmd{copies: copies, args: []string{"-c", "1+1"}}
	for round := range 7 {
		want := []string{copies[round%3], "-c", "1+1"}
		if got := cmd.argv(round); !slices.Equal(got, want) {
			t.Errorf("round %d: argv = %q, want %q", round, got, want)
		}
	}
}

// TestCopiesWrittenInTurn: copies are written a round of programs at a
// time, and over the bench's copies every program's sit at the same mean
// place in the order, with none always the last written. (Written program
// by program, the last program's copies were always the newest, and two
// sets of copies of one binary timed ~3% apart.)
func TestCopiesWrittenInTurn(t *testing.T) {
	for n := 1; n <= 6; n++ {
		sched := copySchedule(n, copiesPerProgram)
		if len(sched) != n*copiesPerProgram {
			t.Fatalf("%d programs: %d copies scheduled, want %d", n, len(sched), n*copiesPerProgram)
		}
		placeSum, last, seen := make([]int, n), make([]int, n), map[copyTurn]bool{}
		for at, w := range sched {
			if seen[w] || w.copy != at/n {
				t.Fatalf("%d programs: turn %d is %+v (again, or out of its round)", n, at, w)
			}
			seen[w] = true
			placeSum[w.prog] += at
			if at%n == n-1 {
				last[w.prog]++
			}
		}
		for p := range n {
			if placeSum[p] != placeSum[0] {
				t.Errorf("%d programs: places of program %d's copies sum to %d, program 0's to %d", n, p, placeSum[p], placeSum[0])
			}
			if n > 1 && last[p] == copiesPerProgram {
				t.Errorf("%d programs: program %d's copy is always the last of its round", n, p)
			}
		}
	}
}

// TestBalancedOrder: over its cycle every round runs each command once,
// every command takes each place equally often and runs right after every
// other equally often.
func TestBalancedOrder(t *testing.T) {
	for n := 1; n <= 9; n++ {
		rows := balancedRows(n)
		var runs [][]int
		for r := range rows {
			runs = append(runs, balancedOrder(n, r))
		}
		checkBalanced(t, n, runs)
	}
}

// TestRoundsRunInTurn runs real commands through measureRounds and reads
// back the order they ran in: the measured rounds are balanced, as
// TestBalancedOrder asks, and so are the warm-up rounds before them.
func TestRoundsRunInTurn(t *testing.T) {
	log := filepath.Join(t.TempDir(), "order")
	argv := func(c, _ int) []string {
		return []string{"/bin/sh", "-c", "printf " + string(rune('a'+c)) + " >> " + log}
	}
	const n = 3
	if _, err := measureRounds(2*balancedRows(n)-2, n, argv, nil, nil); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*balancedRows(n)*n {
		t.Fatalf("%d runs logged (%q), want %d", len(got), got, 2*balancedRows(n)*n)
	}
	var runs [][]int
	for r := 2; r < 2+balancedRows(n); r++ {
		var round []int
		for _, b := range got[r*n : (r+1)*n] {
			round = append(round, int(b-'a'))
		}
		runs = append(runs, round)
	}
	checkBalanced(t, n, runs)
}

// checkBalanced checks that each round of runs runs n commands once each,
// that every command takes each place equally often, and that each runs
// right after every other equally often.
func checkBalanced(t *testing.T, n int, runs [][]int) {
	t.Helper()
	place, after := map[[2]int]int{}, map[[2]int]int{}
	for _, round := range runs {
		if s := slices.Sorted(slices.Values(round)); len(s) != n || s[0] != 0 || s[n-1] != n-1 || len(slices.Compact(s)) != n {
			t.Fatalf("%d commands: round %v does not run each once", n, round)
		}
		for i, c := range round {
			place[[2]int{c, i}]++
			if i > 0 {
				after[[2]int{round[i-1], c}]++
			}
		}
	}
	for a := range n {
		for b := range n {
			if place[[2]int{a, b}] != len(runs)/n {
				t.Errorf("%d commands: command %d runs in place %d %d times in %d rounds", n, a, b, place[[2]int{a, b}], len(runs))
			}
			if a != b && after[[2]int{a, b}] != len(runs)/n {
				t.Errorf("%d commands: %d runs right after %d %d times in %d rounds", n, b, a, after[[2]int{a, b}], len(runs))
			}
		}
	}
}

// TestPairedRatio: the median of each round's own ratio, a build against
// itself exactly 1.
func TestPairedRatio(t *testing.T) {
	mk := func(ms ...float64) []result {
		var out []result
		for _, m := range ms {
			out = append(out, result{cpu: time.Duration(m * float64(time.Millisecond))})
		}
		return out
	}
	a, b := mk(2.2, 4.4, 3.3, 8.8, 1.1), mk(2, 4, 3, 8, 1)
	cpu := func(r result) float64 { return float64(r.cpu) }
	if got := pairedRatio(a, b, cpu); got < 1.0999 || got > 1.1001 {
		t.Errorf("pairedRatio = %v, want 1.1", got)
	}
	if got := pairedRatio(b, b, cpu); got != 1 {
		t.Errorf("pairedRatio of a build against itself = %v, want 1", got)
	}
}

// TestLinkedSource returns at the top of main behind a variable and keeps
// the rest of main.go, so the linked program links what tinker links; a
// main.go it cannot place the return in is an error, not a program that
// runs all of tinker.
func TestLinkedSource(t *testing.T) {
	mainGo := "package main\n\nimport \"os\"\n\nfunc main() {\n\tos.Exit(run())\n}\n"
	got, err := linkedSource(mainGo)
	if err != nil {
		t.Fatal(err)
	}
	want := "package main\n\nimport \"os\"\n\nfunc main() {\n\tif " + linkedStop + " {\n\t\treturn\n\t}\n\tos.Exit(run())\n}\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("linkedSource:\n%s\nwant it to begin\n%s", got, want)
	}
	if !strings.Contains(got, "\nvar "+linkedStop+" = true\n") {
		t.Errorf("linkedSource does not declare %s true:\n%s", linkedStop, got)
	}
	if _, err := linkedSource("package main\n\nfunc run() {}\n"); err == nil {
		t.Error("linkedSource accepted a main.go without func main")
	}
}

// TestLinkedProgramReturnsAtOnce builds the linked program from this tree
// and runs it: it must say nothing and succeed whatever it is asked (-c
// '1+1' would print 2 if main ran), and be as large as tinker, which it
// is only if main's calls stayed linked.
func TestLinkedProgramReturnsAtOnce(t *testing.T) {
	dir := t.TempDir()
	bin, err := buildLinked(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-c", "1+1").CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Fatalf("linked program -c '1+1': %v, output %q; want success and no output", err, out)
	}
	tinker := filepath.Join(dir, "tinker")
	if err := goBuild("../..", tinker, "./cmd/tinker"); err != nil {
		t.Fatal(err)
	}
	a, errA := os.Stat(bin)
	b, errB := os.Stat(tinker)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	// Only main.go's few lines differ.
	if d := a.Size() - b.Size(); d < -64<<10 || d > 64<<10 {
		t.Errorf("linked program is %d bytes, tinker %d: main's calls were not linked", a.Size(), b.Size())
	}
}
