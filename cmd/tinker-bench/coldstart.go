package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// coldStart times tinker's start next to /bin/true, a Go program that links
// net/http, the floor (a program that initialises every dependency tinker
// links and does nothing else) and the linked program (tinker returning at
// the top of main, linked.go), the three built here with the Makefile's
// flags, the runs of each command interleaved so a change in the machine's
// load falls on all alike.
func coldStart(args []string) error {
	// More rounds resolve smaller differences: a few percent between two
	// builds needs a few hundred on a shared machine.
	minRuns, bins, err := leadingRounds(args, coldRuns)
	if err != nil {
		return err
	}
	if len(bins) == 0 {
		return fmt.Errorf("no tinker: usage: tinker-bench coldstart [-rounds N] PATH/TO/tinker [OTHER/tinker...]")
	}
	dir, err := os.MkdirTemp("", "tinker-bench-coldstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	hello, err := buildHello(dir)
	if err != nil {
		return err
	}
	floor, err := buildFloor(dir)
	if err != nil {
		return err
	}
	linked, err := buildLinked(dir)
	if err != nil {
		return err
	}
	progs := []string{hello, floor, linked}
	cmds := []coldCmd{{copies: []string{"/bin/true"}}, {}, {}, {}}
	labels := []string{"/bin/true", "Go net/http hello world", "floor: dependencies' init", "linked: main returns at once"}
	for i, bin := range bins {
		tag := ""
		if len(bins) > 1 {
			tag = fmt.Sprintf(" [%d]", i+1)
			fmt.Printf("[%d] %s\n", i+1, bin)
		}
		progs = append(progs, bin)
		cmds = append(cmds, coldCmd{args: []string{"--version"}}, coldCmd{args: []string{"-c", "1+1"}})
		labels = append(labels, "tinker --version"+tag, "tinker -c 1+1"+tag)
	}
	// Every program's copies are written now, interleaved (writeCopies):
	// hello's, the floor's and the linked program's go to cmds[1] to [3],
	// each tinker's to its two commands.
	copies, err := writeCopies(progs, dir, copiesPerProgram)
	if err != nil {
		return err
	}
	for r := 1; r < refCmds; r++ {
		cmds[r].copies = copies[r-1]
	}
	for i := range bins {
		c := refCmds + 2*i
		cmds[c].copies, cmds[c+1].copies = copies[refCmds-1+i], copies[refCmds-1+i]
	}
	runs := coldRounds(len(cmds), minRuns)
	env := append(os.Environ(), "TINKER_API_KEY=", "NO_COLOR=1")
	samples, err := measureRounds(runs, len(cmds), func(c, round int) []string { return cmds[c].argv(round) }, env, nil)
	if err != nil {
		return err
	}
	res := mediansOf(samples)
	fmt.Printf("median of %d runs over %d copies of each program; ratios against the Go net/http hello world\n", runs, copiesPerProgram)
	fmt.Println("floor: an empty main importing every package tinker links but its own; tinker cannot start faster")
	fmt.Println("linked: this tree's tinker returning at the top of main; above the floor, what linking tinker's code costs")
	printTable(labels, res, res[1])
	printPaired(labels, samples, len(bins))
	return nil
}

// refCmds is how many reference commands come before the tinkers' (/bin/true,
// hello, the floor, the linked program).
const refCmds = 4

// printPaired prints each tinker's two commands (from cmds[refCmds] on, two
// a tinker) against the first tinker's, as medians of per-round ratios.
func printPaired(labels []string, samples [][]result, bins int) {
	for i := 1; i < bins; i++ {
		for c := range 2 {
			a, b := samples[refCmds+2*i+c], samples[refCmds+c]
			fmt.Printf("%s ÷ [1], median of per-round ratios: wall %.3f, CPU %.3f\n", labels[refCmds+2*i+c],
				pairedRatio(a, b, func(r result) float64 { return float64(r.wall) }),
				pairedRatio(a, b, func(r result) float64 { return float64(r.cpu) }))
		}
	}
}

// copiesPerProgram is how many copies of each measured program the rounds
// take turns with. Copies of the same bytes, each written in 4 KiB pieces,
// start differently: on this VM two copies of one tinker made minutes
// apart differed by 9% in CPU time over 300 interleaved runs, more than
// most changes one wants to see. Rotating over copies written at the same
// moment spreads that over every program alike. Two sets of copies of one
// binary, timed against each other, came within 0.95-1.0 of each other
// with one copy each, 0.985-1.002 with three and 0.997 with twelve
// (interleaved, under load), so eight.
const copiesPerProgram = 8

// coldRuns is about how many times each command runs unless -rounds says
// otherwise: coldRounds makes it a multiple of copiesPerProgram, so each
// copy is taken equally often, and of balancedOrder's cycle.
const coldRuns = 48

// coldRounds is the number of measured rounds for n commands: the least
// multiple of both copiesPerProgram and balancedRows(n) from minRuns on.
func coldRounds(n, minRuns int) int {
	step := copiesPerProgram
	for step%balancedRows(n) != 0 {
		step += copiesPerProgram
	}
	return (minRuns + step - 1) / step * step
}

// coldCmd is one measured command: a program's copies, taken in turn, and
// its arguments.
type coldCmd struct {
	copies []string
	args   []string
}

// argv is the command line of round: the next copy, with the arguments.
func (c coldCmd) argv(round int) []string {
	return append([]string{c.copies[round%len(c.copies)]}, c.args...)
}

// writeCopies writes k copies of each program in progs into dir (copy j
// of program i is progI.J+1, written with copyInPages) and returns each
// program's copies. The order is copySchedule's: when each program's copies
// were written one program after another, the last program's copies were
// always the newest in the page cache, and two sets of copies of one
// binary timed a steady ~3% apart.
func writeCopies(progs []string, dir string, k int) ([][]string, error) {
	out := make([][]string, len(progs))
	for i := range out {
		out[i] = make([]string, k)
	}
	for _, w := range copySchedule(len(progs), k) {
		path := filepath.Join(dir, fmt.Sprintf("prog%d.%d", w.prog, w.copy+1))
		if err := copyInPages(progs[w.prog], path); err != nil {
			return nil, err
		}
		out[w.prog][w.copy] = path
	}
	return out, nil
}

// copyTurn is one copy to write: copy number copy of program prog.
type copyTurn struct{ prog, copy int }

// copySchedule is the order writeCopies writes k copies of n programs in:
// copy j of every program before copy j+1 of any, the programs in turns
// order (forward, then backward), so over an even k every program's copies
// sit at the same mean place in the sequence and none is always last.
func copySchedule(n, k int) []copyTurn {
	out := make([]copyTurn, 0, n*k)
	for j := range k {
		for _, i := range turns(n, j) {
			out = append(out, copyTurn{i, j})
		}
	}
	return out
}

// helloSource is the reference program: hello world linking net/http, so
// its start pays that package's initialisation as tinker's does.
const helloSource = `package main

import (
	"fmt"
	"net/http"
)

func main() { fmt.Println("hello", http.StatusText(http.StatusOK), http.DefaultClient != nil) }
`

// buildFlags and buildEnv are `make build`'s: keep them in step, so
// neither side gains from a build setting alone.
var (
	buildFlags = []string{"-trimpath", "-ldflags=-s -w"}
	buildEnv   = []string{"CGO_ENABLED=0"}
)

// buildHello builds the reference in its own module under dir.
func buildHello(dir string) (string, error) {
	src := filepath.Join(dir, "hello")
	if err := os.Mkdir(src, 0o755); err != nil {
		return "", err
	}
	files := map[string]string{"main.go": helloSource, "go.mod": "module hello\n\ngo 1.22\n"}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	bin := filepath.Join(dir, "hello-bin")
	if err := goBuild(src, bin, "."); err != nil {
		return "", fmt.Errorf("build the net/http reference: %w", err)
	}
	return bin, nil
}

// goBuild runs `go build` with buildFlags and buildEnv (and extra
// arguments) in dir, then rewrites the binary with copyInPages.
func goBuild(dir, bin string, args ...string) error {
	linked := bin + ".linked"
	build := exec.Command("go", append(append(append([]string{"build"}, buildFlags...), "-o", linked), args...)...)
	build.Dir, build.Env = dir, append(os.Environ(), buildEnv...)
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	defer os.Remove(linked)
	return copyInPages(linked, bin)
}
