package shell

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/term"
	"go.starlark.net/starlark"
)

// scripted is a LineEditor that types the given lines, then Ctrl-D.
type scripted struct {
	lines   []string
	history []string
}

func (s *scripted) Prompt(string) (string, error) {
	if len(s.lines) == 0 {
		return "", io.EOF
	}
	l := s.lines[0]
	s.lines = s.lines[1:]
	return l, nil
}
func (s *scripted) AppendHistory(l string) { s.history = append(s.history, l) }
func (s *scripted) Close() error           { return nil }

func newTestInterp(out, errw *bytes.Buffer) *Interp {
	io := term.Test(nil, out, errw)
	return New(io, &builtins.Env{}, &Display{IO: io})
}

// TestPromptManners: `_` survives print(), bare exit and quit explain how
// to leave, and a syntax error points at its column.
func TestPromptManners(t *testing.T) {
	var out, errw bytes.Buffer
	in := newTestInterp(&out, &errw)
	ed := &scripted{lines: []string{"x = 5", "x", "print(1)", "_", "exit", "quit", "len([1]) +* 2"}}
	if code := in.REPL(ed, "banner"); code != ExitOK {
		t.Fatalf("REPL returned %d", code)
	}
	const hint = "Use exit() or Ctrl-D (i.e. EOF) to exit\n"
	if got, want := out.String(), "5\n1\n5\n"+hint+hint; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	const wantErr = "banner\n<stdin>:1:11: got '*', want primary expression\n    len([1]) +* 2\n              ^\n\n"
	if got := errw.String(); got != wantErr {
		t.Errorf("stderr %q, want %q", got, wantErr)
	}
}

// TestPromptQuitLeaves: quit() ends the prompt like exit().
func TestPromptQuitLeaves(t *testing.T) {
	var out, errw bytes.Buffer
	in := newTestInterp(&out, &errw)
	if code := in.REPL(&scripted{lines: []string{"quit(3)", "1"}}, ""); code != 3 {
		t.Fatalf("quit(3) gave status %d, want 3", code)
	}
	if out.Len() != 0 {
		t.Errorf("ran on after quit(): %q", out.String())
	}
}

// TestCompleteLanguageBuiltins: Tab offers Starlark's own functions.
func TestCompleteLanguageBuiltins(t *testing.T) {
	var out, errw bytes.Buffer
	in := newTestInterp(&out, &errw)
	for prefix, want := range map[string]string{"so": "sorted", "le": "len", "ra": "range"} {
		_, got, _ := in.Complete(prefix, len(prefix))
		if !slices.Contains(got, want) {
			t.Errorf("Complete(%q) = %v, want it to offer %s", prefix, got, want)
		}
	}
}

// TestCompleteCapped: Tab never lists more than liner shows without asking.
func TestCompleteCapped(t *testing.T) {
	var out, errw bytes.Buffer
	in := newTestInterp(&out, &errw)
	for i := 0; i < 150; i++ {
		in.globals[fmt.Sprintf("v%03d", i)] = starlark.MakeInt(i)
	}
	if _, got, _ := in.Complete("", 0); len(got) != maxCompletions {
		t.Errorf("Complete(\"\") gave %d candidates, want %d", len(got), maxCompletions)
	}
}

// TestPromptSeveralStatements: `a; b` shows each expression's value, as
// Python's REPL does; `_` is the last; an error stops the rest of the line.
func TestPromptSeveralStatements(t *testing.T) {
	var out, errw bytes.Buffer
	in := newTestInterp(&out, &errw)
	ed := &scripted{lines: []string{"a = 1; a; a + 1", "_", "1; fail('stop'); 3"}}
	if code := in.REPL(ed, ""); code != ExitOK {
		t.Fatalf("REPL returned %d", code)
	}
	if got, want := out.String(), "1\n2\n2\n1\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if got := errw.String(); !bytes.Contains([]byte(got), []byte("stop")) {
		t.Errorf("stderr %q, want the fail message", got)
	}
}
