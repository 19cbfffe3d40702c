package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// pssEvery is how often run reads a command's PSS.
const pssEvery = 20 * time.Millisecond

// runBench runs commands given as argument lists separated by "--" (the
// first may be preceded by -rounds N, default 3) in interleaved rounds
// with no warm-up rounds (they are long runs: a sampling benchmark, a
// training step) and prints each one's medians, its peak RSS (wait4's
// maxrss) beside its peak PSS read every pssEvery (runWatched), and
// each command's paired ratios against the first. The commands inherit
// the environment (a benchmark's switches: per command through env(1));
// their standard error is passed on (a benchmark's own figures).
func runBench(args []string) error {
	rounds, args, err := leadingRounds(args, 3)
	if err != nil {
		return err
	}
	var cmds [][]string
	for cmd := range splitArgs(args) {
		if len(cmd) == 0 {
			return fmt.Errorf("an empty command between --: give each command's program and arguments")
		}
		cmds = append(cmds, cmd)
	}
	if len(cmds) == 0 {
		return fmt.Errorf("no command: usage: tinker-bench run [-rounds N] PROGRAM [ARG...] [-- PROGRAM [ARG...]]...")
	}
	samples := make([][]result, len(cmds))
	for round := range rounds {
		for _, c := range balancedOrder(len(cmds), round) {
			r, _, err := runWatched(cmds[c], os.Environ(), pssEvery, os.Stderr)
			if err != nil {
				return err
			}
			samples[c] = append(samples[c], r)
		}
	}
	labels := make([]string, len(cmds))
	for c, cmd := range cmds {
		labels[c] = fmt.Sprintf("[%d] %s", c+1, strings.Join(cmd, " "))
		if len(labels[c]) > 30 {
			labels[c] = labels[c][:29] + "…"
		}
		fmt.Printf("[%d] %s\n", c+1, strings.Join(cmd, " "))
	}
	res := mediansOf(samples)
	fmt.Printf("median of %d rounds; RSS: wait4's peak (a page of several mappings counted in each); peak PSS: read every %v while it ran\n", rounds, pssEvery)
	printTable(labels, res, res[0])
	for c := 1; c < len(cmds); c++ {
		a, b := samples[c], samples[0]
		fmt.Printf("%s ÷ [1], median of per-round ratios: wall %.3f, CPU %.3f, RSS %.3f, peak PSS %.3f\n", labels[c],
			pairedRatio(a, b, func(r result) float64 { return float64(r.wall) }),
			pairedRatio(a, b, func(r result) float64 { return float64(r.cpu) }),
			pairedRatio(a, b, func(r result) float64 { return r.rss }),
			pairedRatio(a, b, func(r result) float64 { return r.pss }))
	}
	return nil
}

// splitArgs yields the argument lists between "--"s.
func splitArgs(args []string) func(yield func([]string) bool) {
	return func(yield func([]string) bool) {
		for len(args) > 0 {
			i := slices.Index(args, "--")
			if i < 0 {
				yield(args)
				return
			}
			if !yield(args[:i]) {
				return
			}
			args = args[i+1:]
		}
	}
}

// leadingRounds reads an optional leading "-rounds N" (def when absent)
// and returns the arguments after it.
func leadingRounds(args []string, def int) (int, []string, error) {
	if len(args) == 0 || args[0] != "-rounds" {
		return def, args, nil
	}
	if len(args) < 2 {
		return 0, nil, fmt.Errorf("-rounds: want a number of rounds after it")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 1 {
		return 0, nil, fmt.Errorf("-rounds %q: want a positive number of rounds", args[1])
	}
	return n, args[2:], nil
}
