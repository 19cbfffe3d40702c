package shell

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mattn/go-runewidth"
	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/render"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// REPL runs the interactive prompt until Ctrl-D or exit(). It returns the
// process exit status.
func (in *Interp) REPL(ed LineEditor, banner string) int {
	defer ed.Close()
	if in.IO.ErrTTY {
		banner = wrapText(banner, in.IO.Width)
	}
	fmt.Fprintln(in.IO.Err, banner)
	replOpts := replOpts()
	for k, v := range in.predeclared {
		if _, ok := in.globals[k]; !ok {
			in.globals[k] = v
		}
	}
	in.Env.Interactive = true
	// One SIGINT handler for the whole session: SIGINT never ends the
	// prompt, whatever it is doing.
	keys, _ := ed.(keyWatcher)
	defer onSignal(func() {
		if keys == nil || !keys.interrupt() {
			in.intr.interrupt()
		}
	})()
	if keys != nil {
		in.keys = keys
		defer func() { in.keys = nil }()
	}
	in.Display.Page = in.page
	defer func() { in.Display.Page = nil }()
	in.Env.Confirm = func(question string) (bool, error) {
		// The line editor takes a one-line prompt: print the rest first.
		if i := strings.LastIndexByte(question, '\n'); i >= 0 {
			fmt.Fprintln(in.IO.Out, question[:i])
			question = question[i+1:]
		}
		for {
			answer, err := ed.Prompt(question + " [y/N]: ")
			if err != nil {
				return false, fmt.Errorf("no answer: %w", err)
			}
			switch strings.ToLower(strings.TrimSpace(answer)) {
			case "y", "yes":
				return true, nil
			case "", "n", "no":
				return false, nil
			}
			fmt.Fprintln(in.IO.Err, "Please answer y or n.")
		}
	}
	// quit is exit's other name at the prompt, as in Python.
	if exit, ok := in.globals["exit"]; ok {
		if _, taken := in.globals["quit"]; !taken {
			in.globals["quit"] = exit
		}
	}
	// A statement recalled from history comes as several lines at once; the
	// parser takes them one by one, then a blank line that ends a compound
	// statement as pressing Enter on "... " would. Lines left when a
	// statement ends early (the entry was edited) start the next one.
	var pending []string
	recalled := false
	for {
		prompt := ">>> "
		eof, aborted := false, false
		var pasted *Pasted
		var lines []string // of this statement, for history and for pointing at a syntax error
		readline := func() ([]byte, error) {
			var line string
			switch {
			case len(pending) > 0:
				line, pending = pending[0], pending[1:]
			case recalled:
				recalled = false
				return []byte("\n"), nil
			default:
				text, err := ed.Prompt(prompt)
				prompt = "... "
				if err != nil {
					// The parser wraps these errors, so remember what happened.
					eof = err == io.EOF
					aborted = errors.Is(err, ErrAborted)
					errors.As(err, &pasted)
					return nil, err
				}
				split := strings.Split(text, "\n")
				line, pending = split[0], split[1:]
				recalled = len(pending) > 0
			}
			lines = append(lines, line)
			return []byte(line + "\n"), nil
		}
		f, err := replOpts.ParseCompoundStmt("<stdin>", readline)
		if text := statementText(lines); text != "" {
			ed.AppendHistory(text)
		}
		if err != nil {
			pending, recalled = nil, false
			switch {
			case eof:
				fmt.Fprintln(in.IO.Err)
				return ExitOK
			case aborted:
				continue
			case pasted != nil:
				if code, stop := in.runPaste(ed, append(lines, pasted.Text)); stop {
					return code
				}
				continue
			}
			fmt.Fprintln(in.IO.Err, FormatError(err, false, false))
			if caret := pointAt(err, lines); caret != "" {
				fmt.Fprint(in.IO.Err, caret)
			}
			continue
		}
		// The terminal may have been resized since the last statement.
		in.IO.Refresh()
		in.Env.Width = in.IO.Width
		if code, stop := in.evalChunk(f); stop {
			return code
		}
	}
}

// runPaste runs a paste (after the lines of the statement it was pasted
// into) as one input, parsed as a whole as a file is, so that blank lines
// inside it do not end a function. It echoes the paste after its first
// line (which the line editor showed) as continuation lines.
func (in *Interp) runPaste(ed LineEditor, lines []string) (code int, stop bool) {
	text := strings.TrimRight(strings.Join(lines, "\n"), "\n")
	ed.AppendHistory(text)
	parts := strings.Split(text, "\n")
	for _, l := range parts[min(len(lines), len(parts)):] {
		fmt.Fprintln(in.IO.Out, "... "+render.PrintableLines(l))
	}
	f, err := replOpts().Parse("<stdin>", text, 0)
	if err != nil {
		fmt.Fprintln(in.IO.Err, FormatError(err, false, false))
		return 0, false
	}
	in.IO.Refresh()
	in.Env.Width = in.IO.Width
	return in.evalChunk(f)
}

// evalChunk evaluates what was typed at the prompt one statement at a time,
// as Python's REPL does: each expression statement's value is displayed
// and kept in `_` (so `a; b` shows both), and the first error stops the rest.
func (in *Interp) evalChunk(f *syntax.File) (code int, stop bool) {
	for _, stmt := range f.Stmts {
		err, interrupted := in.evalStmt(&syntax.File{Path: f.Path, Stmts: []syntax.Stmt{stmt}, Options: f.Options})
		if err == nil && !interrupted {
			continue
		}
		var exit *builtins.ExitError
		if errors.As(err, &exit) {
			return exit.Code, true
		}
		fmt.Fprintln(in.IO.Err, FormatPromptError(err, interrupted))
		return 0, false
	}
	return 0, false
}

// evalStmt runs a file of one statement; an expression's value is shown.
func (in *Interp) evalStmt(f *syntax.File) (err error, interrupted bool) {
	expr := soleExpr(f)
	if expr == nil {
		in.lateBind(f)
		defer in.warnShadowed()
		return in.run(func(t *starlark.Thread) error {
			return starlark.ExecREPLChunk(f, t, in.globals)
		})
	}
	return in.run(func(t *starlark.Thread) error {
		v, err := starlark.EvalExprOptions(f.Options, t, expr, in.env())
		if err != nil {
			return err
		}
		if isExitFunc(expr, v) {
			// A bare `exit` or `quit` shows how to leave, as Python's REPL does.
			_, err := fmt.Fprintln(in.IO.Out, "Use exit() or Ctrl-D (i.e. EOF) to exit")
			return err
		}
		if v == starlark.None {
			return nil // print() and other calls for effect keep `_`
		}
		in.globals["_"] = v
		return in.Display.Show(v)
	})
}

// replOpts are the prompt's syntax options: a file's, except that load
// binds globally.
func replOpts() *syntax.FileOptions {
	o := *fileOptions
	o.LoadBindsGlobally = true
	return &o
}

// env is the prompt's environment: ExecREPLChunk has no predeclared
// scope, so REPL starts by copying the builtins into the globals.
func (in *Interp) env() starlark.StringDict { return in.globals }

// isExitFunc reports whether expr is the name exit or quit bound to the
// exit builtin.
func isExitFunc(expr syntax.Expr, v starlark.Value) bool {
	id, ok := expr.(*syntax.Ident)
	if !ok || id.Name != "exit" && id.Name != "quit" {
		return false
	}
	b, ok := v.(*starlark.Builtin)
	return ok && b.Name() == "exit"
}

// pointAt shows the line of a syntax error with a caret under its column,
// or "" when the error has no position among lines.
func pointAt(err error, lines []string) string {
	var serr syntax.Error
	if !errors.As(err, &serr) {
		return ""
	}
	line, col := int(serr.Pos.Line), int(serr.Pos.Col)
	if line < 1 || line > len(lines) || col < 1 {
		return ""
	}
	text := render.PrintableLines(lines[line-1])
	runes := []rune(lines[line-1])
	if col-1 > len(runes) {
		col = len(runes) + 1
	}
	// Tabs keep their width so the caret stays under the column.
	var pad strings.Builder
	for _, r := range runes[:col-1] {
		if r == '\t' {
			pad.WriteByte('\t')
		} else {
			pad.WriteString(strings.Repeat(" ", runewidth.RuneWidth(r)))
		}
	}
	return "    " + text + "\n    " + pad.String() + "^\n"
}

// statementText is a statement's lines as one text, without the blank lines
// that ended it.
func statementText(lines []string) string {
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}
