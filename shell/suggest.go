package shell

import (
	"sort"
	"strings"

	"github.com/tinkershell/tinker/builtins"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
)

// The resolver reports a misspelt builtin as "undefined: chekpoint"; the
// shell adds the name it probably meant.

// resolveMessage is the first resolver error, with a suggestion when the
// undefined name is close to a predeclared one.
func resolveMessage(errs resolve.ErrorList) string {
	e := errs[0]
	if name, ok := strings.CutPrefix(e.Msg, "undefined: "); ok {
		if s := nearestName(name, predeclaredNames()); s != "" {
			e.Msg += " (did you mean " + s + "?)"
		}
	}
	return e.Error()
}

// predeclaredNames are the names every program sees: tinker's builtins,
// the shell's own (print, argv) and Starlark's universe.
func predeclaredNames() []string {
	names := []string{"print", "argv"}
	for n := range builtins.Universe() {
		names = append(names, n)
	}
	for n := range starlark.Universe {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// nearestName is the candidate closest to name by edit distance, if it is
// within a third of name's length (at least 1); ties go to the first.
func nearestName(name string, candidates []string) string {
	best, bestD := "", max(1, len(name)/3)+1
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestD && c != name {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
