package shell

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tinkershell/tinker/builtins"
	"go.starlark.net/starlark"
)

// Tracebacks. Deep recursion leaves thousands of frames: a run of one
// repeated frame folds as Python folds it (foldRepeats, issue 18), a
// cycle of two to maxCycle frames (mutual recursion) is shown once with a
// count, and at most maxFrames lines of frames are shown, the outermost
// and the innermost.
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
	var b strings.Builder
	if len(stack) > 0 {
		b.WriteString("Traceback (most recent call last):\n")
		lines := strings.Split(foldRepeats(strings.Join(foldCycles(stack), "\n")), "\n")
		if n := len(lines); n > maxFrames {
			omitted := fmt.Sprintf("  ... %d more lines not shown ...", n-maxFrames)
			lines = append(append(lines[:maxFrames/2:maxFrames/2], omitted), lines[n-maxFrames/2:]...)
		}
		b.WriteString(strings.Join(lines, "\n") + "\n")
	}
	fmt.Fprintf(&b, "Error%s: %s", suffix, e.Msg)
	return b.String()
}

// foldCycles lists one line per frame, a cycle of 2 to maxCycle frames
// that repeats at least three times in a row once with a count; runs of a
// single frame are left to foldRepeats.
func foldCycles(stack starlark.CallStack) []string {
	var lines []string
	for i := 0; i < len(stack); {
		period, times := cycle(stack[i:])
		for _, fr := range stack[i : i+period] {
			lines = append(lines, fmt.Sprintf("  %s: in %s", fr.Pos, fr.Name))
		}
		if times > 1 {
			lines = append(lines, fmt.Sprintf("  [previous %d frames repeated %d more times]", period, times-1))
		}
		i += period * times
	}
	return lines
}

// cycle finds the shortest cycle of two or more frames that starts stack
// and repeats at least three times in a row; without one (or when the
// first frame simply repeats) it returns one frame, once.
func cycle(stack starlark.CallStack) (period, times int) {
	if len(stack) > 1 && sameFrames(stack[:1], stack[1:2]) {
		return 1, 1
	}
	for p := 2; p <= maxCycle && 3*p <= len(stack); p++ {
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
