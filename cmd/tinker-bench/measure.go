package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
)

// result is one command's medians over the measured runs.
type result struct {
	wall   time.Duration
	cpu    time.Duration // user + system of the process and its children
	faults float64       // minor page faults
	rss    float64       // peak RSS, MB
	pss    float64       // peak PSS seen, MB (runWatched on Linux; 0: none read)
}

// mediansOf is each command's medians over its runs.
func mediansOf(samples [][]result) []result {
	out := make([]result, len(samples))
	for c := range out {
		out[c] = medians(samples[c])
	}
	return out
}

// pairedRatio is the median over rounds of a's run divided by b's in the
// same round, by key: the figure to compare two builds by, since a
// round's runs share the machine's load of the moment.
func pairedRatio(a, b []result, key func(result) float64) float64 {
	rs := make([]float64, 0, len(a))
	for r := range min(len(a), len(b)) {
		rs = append(rs, ratio(key(a[r]), key(b[r])))
	}
	if len(rs) == 0 {
		return 0
	}
	slices.Sort(rs)
	return rs[len(rs)/2]
}

// measureRounds runs each of cmds commands n times (after two warm-up
// rounds for the page cache), one round of all commands after another,
// with the command line of command c in round r given by argv(c, r): a
// command can then run a different copy of its program in each round. env
// is the commands' environment; check, if set, is given each measured
// run's standard output. It returns every command's measured runs, round
// by round. The commands of a round run in balancedOrder, so
// none always runs first or last, or right after the same command.
func measureRounds(n, cmds int, argv func(c, round int) []string, env []string, check func(c int, out []byte) error) ([][]result, error) {
	samples := make([][]result, cmds)
	for round := 0; round < n+2; round++ {
		for _, c := range balancedOrder(cmds, round) {
			r, out, err := runOnce(argv(c, round), env)
			if err != nil {
				return nil, err
			}
			if round < 2 {
				continue
			}
			if check != nil {
				if err := check(c, out); err != nil {
					return nil, err
				}
			}
			samples[c] = append(samples[c], r)
		}
	}
	return samples, nil
}

// turns is the order n things take their turn in pass j: forward in even
// passes, backward in odd ones. Over an even number of passes each one's
// mean place is the same, (n-1)/2, so a drift in the machine's state over
// the passes (page cache, writeback, load) falls on all alike.
func turns(n, pass int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
		if pass%2 == 1 {
			out[i] = n - 1 - i
		}
	}
	return out
}

// balancedOrder is the order of n commands in round r: the rows of a
// Williams design taken in turn, a Latin square in which every command runs
// right after every other equally often (n rows for even n, 2n for odd).
// In one fixed order, forward or back and forth, two identical tinkers
// timed apart: a start right after another tinker's start took 3-4% less
// CPU than one right after the floor's.
func balancedOrder(n, round int) []int {
	r := round % balancedRows(n)
	out := make([]int, n)
	for i := range out {
		v := (i + 1) / 2 // the first row: 0, 1, n-1, 2, n-2, ...
		if i%2 == 0 {
			v = (n - i/2) % n
		}
		out[i] = (v + r) % n
	}
	if r >= n {
		slices.Reverse(out)
	}
	return out
}

// balancedRows is how many rounds balancedOrder takes to balance n
// commands.
func balancedRows(n int) int {
	if n%2 == 1 {
		return 2 * n
	}
	return n
}

// runOnce runs argv once and reads its resource use from wait4.
func runOnce(argv []string, env []string) (result, []byte, error) {
	return runWatched(argv, env, 0, nil)
}

// runWatched is runOnce that also reads the process's proportional set
// size every `every` while it runs (every > 0; Linux), keeping the
// peak: wait4's maxrss counts a page mapped by several mappings once for
// each (a memory file that every sample's cache maps, kvalias.go, counts
// once a sample), PSS 1/k in each of k. A process that ends before the
// first reading has none (0). Its standard error goes to errs too (nil:
// kept for the error message only).
func runWatched(argv []string, env []string, every time.Duration, errs io.Writer) (result, []byte, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &stdout, &stderr
	if errs != nil {
		cmd.Stderr = io.MultiWriter(&stderr, errs)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return result{}, nil, fmt.Errorf("%s: %v", strings.Join(argv, " "), err)
	}
	peak := make(chan float64, 1)
	stop := make(chan struct{})
	go func() { peak <- watchPss(cmd.Process.Pid, every, stop) }()
	err := cmd.Wait()
	close(stop)
	pss := <-peak
	if err != nil {
		return result{}, nil, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, firstLine(stderr.String()))
	}
	r := result{wall: time.Since(start), pss: pss}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.cpu = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
		r.faults, r.rss = float64(ru.Minflt), float64(ru.Maxrss)/1024
	}
	return r, stdout.Bytes(), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func medians(rs []result) result {
	pick := func(key func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = key(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	return result{
		wall:   time.Duration(pick(func(r result) float64 { return float64(r.wall) })),
		cpu:    time.Duration(pick(func(r result) float64 { return float64(r.cpu) })),
		faults: pick(func(r result) float64 { return r.faults }),
		rss:    pick(func(r result) float64 { return r.rss }),
		pss:    pick(func(r result) float64 { return r.pss }),
	}
}

// printTable prints each command's medians and its ratios to ref; the
// peak PSS column where some command was watched (runWatched).
func printTable(labels []string, res []result, ref result) {
	w := io.Writer(os.Stdout)
	watched := slices.ContainsFunc(res, func(r result) bool { return r.pss > 0 })
	pss := func(r result) string {
		switch {
		case !watched:
			return ""
		case r.pss == 0:
			return fmt.Sprintf(" %12s", "-")
		}
		return fmt.Sprintf(" %12.1f", r.pss)
	}
	head := ""
	if watched {
		head = fmt.Sprintf(" %12s", "peak PSS MB")
	}
	fmt.Fprintf(w, "%-30s %9s %9s %8s %8s%s   %s\n", "command", "wall ms", "CPU ms", "faults", "RSS MB", head, "ratio wall / CPU / faults")
	for i, m := range res {
		fmt.Fprintf(w, "%-30s %9.2f %9.2f %8.0f %8.1f%s   %.2f / %.2f / %.2f\n", labels[i], ms(m.wall), ms(m.cpu), m.faults, m.rss, pss(m),
			ratio(float64(m.wall), float64(ref.wall)), ratio(float64(m.cpu), float64(ref.cpu)), ratio(m.faults, ref.faults))
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
