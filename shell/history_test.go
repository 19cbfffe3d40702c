package shell

import (
	"bytes"
	"slices"
	"testing"
)

// TestHistoryEntryRoundTrip: a statement's lines come back from its history
// entry exactly; statements that could not be told apart on the way back
// are not joined.
func TestHistoryEntryRoundTrip(t *testing.T) {
	for _, lines := range [][]string{
		{"def f(x):", "    y = x * 2", "    return y + 1"},
		{"for i in range(3):", "    if i:", "        print(i)"},
		{"x = [1,", "", "2]"},
		{"def f(): # a comment", "    return 1"},
		{"len([1]) +* 2"},
	} {
		entry, ok := joinStatement(lines)
		if !ok {
			t.Errorf("joinStatement(%q) refused", lines)
			continue
		}
		if got := splitRecalled(entry); !slices.Equal(got, lines) {
			t.Errorf("splitRecalled(%q) = %q, want %q", entry, got, lines)
		}
	}
	for _, lines := range [][]string{
		{`s = """a`, `b"""`}, // joined it would be one valid line
		{`x = ["⏎",`, `1]`},  // holds the mark itself
		{`print(1)`},         // one line needs no joining
	} {
		if entry, ok := joinStatement(lines); ok {
			t.Errorf("joinStatement(%q) = %q, want it refused", lines, entry)
		}
	}
	for _, line := range []string{`print("a⏎b")`, `x = 1  # ⏎`, `1 + 2`} {
		if got := splitRecalled(line); !slices.Equal(got, []string{line}) {
			t.Errorf("splitRecalled(%q) = %q, want it whole", line, got)
		}
	}
}

// TestPromptRunsRecalledStatement: a statement that comes back from the
// editor as several lines runs as typed, without an extra Enter, and is
// kept in history as one statement; lines after a statement that ended
// early run as the next statements.
func TestPromptRunsRecalledStatement(t *testing.T) {
	var out, errw bytes.Buffer
	in := newTestInterp(&out, &errw)
	ed := &scripted{lines: []string{
		"def f(x):\n    y = x * 2\n    return y + 1",
		"f(20)",
		"a = 1\nb = a + 1\nb",
	}}
	if code := in.REPL(ed, ""); code != ExitOK {
		t.Fatalf("REPL returned %d", code)
	}
	if got := out.String(); got != "41\n2\n" {
		t.Errorf("stdout %q, want \"41\\n2\\n\"; stderr %q", got, errw.String())
	}
	want := []string{"def f(x):\n    y = x * 2\n    return y + 1", "f(20)", "a = 1", "b = a + 1", "b"}
	if !slices.Equal(ed.history, want) {
		t.Errorf("history %q, want %q", ed.history, want)
	}
}
