package shell

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tinkershell/tinker/builtins"
	"go.starlark.net/starlark"
)

// Tracebacks. Deep recursion leaves thousands of identical frames, so a
// run of repeated frames (one frame, or a cycle of up to maxCycle frames
// as in mutual recursion) is shown once with a count, and at most
// maxFrames lines of frames are shown, the outermost and the innermost.
const (
	maxCycle  = 4
	maxFrames = 20
)

// foldedBacktrace renders an evaluation error as Starlark's Backtrace does
// ("Traceback (most recent call last):", one line per frame, then
// "Error in fn: msg"), folded and bounded.
func foldedBacktrace(e *starlark.EvalError) string {
	stack := e.CallStack
	suffix := ""
	if last := len(stack) - 1; last >= 0 && stack[last].Pos.Filename() == "<builtin>" {
		suffix = " in " + stack[last].Name
		stack = stack[:last]
	}
	lines := foldFrames(stack)
	if n := len(lines); n > maxFrames {
		omitted := fmt.Sprintf("  ... %d more lines not shown ...", n-maxFrames)
		lines = append(append(lines[:maxFrames/2:maxFrames/2], omitted), lines[n-maxFrames/2:]...)
	}
	var b strings.Builder
	if len(lines) > 0 {
		b.WriteString("Traceback (most recent call last):\n")
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	fmt.Fprintf(&b, "Error%s: %s", suffix, e.Msg)
	return b.String()
}

// foldFrames lists one line per frame, a repeated run of frames once.
func foldFrames(stack starlark.CallStack) []string {
	var lines []string
	for i := 0; i < len(stack); {
		period, times := repeats(stack[i:])
		for _, fr := range stack[i : i+period] {
			lines = append(lines, fmt.Sprintf("  %s: in %s", fr.Pos, fr.Name))
		}
		if times > 1 {
			what := "previous frame"
			if period > 1 {
				what = fmt.Sprintf("previous %d frames", period)
			}
			lines = append(lines, fmt.Sprintf("  [%s repeated %d more times]", what, times-1))
		}
		i += period * times
	}
	return lines
}

// repeats finds the shortest cycle that starts stack and repeats at least
// three times in a row; without one it returns one frame, once.
func repeats(stack starlark.CallStack) (period, times int) {
	for p := 1; p <= maxCycle && 3*p <= len(stack); p++ {
		n := 1
		for (n+1)*p <= len(stack) && sameFrames(stack[:p], stack[n*p:(n+1)*p]) {
			n++
		}
		if n >= 3 {
			return p, n
		}
	}
	return 1, 1
}

func sameFrames(a, b starlark.CallStack) bool {
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Pos != b[i].Pos {
			return false
		}
	}
	return true
}

// FormatPromptError renders an error at the prompt: the call stack when
// the error happened inside a function typed at the prompt (or loaded),
// else the one line FormatError gives.
func FormatPromptError(err error, interrupted bool) string {
	var evalErr *starlark.EvalError
	if interrupted || !errors.As(err, &evalErr) || builtins.Expected(evalErr.Unwrap()) {
		return FormatError(err, interrupted, false)
	}
	frames := 0
	for _, fr := range evalErr.CallStack {
		if fr.Pos.Filename() != "<builtin>" {
			frames++
		}
	}
	return FormatError(err, false, frames > 1)
}
