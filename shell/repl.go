package shell

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tinkershell/tinker/builtins"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// REPL runs the interactive prompt until Ctrl-D or exit(). It returns the
// process exit status.
func (in *Interp) REPL(ed LineEditor, banner string) int {
	defer ed.Close()
	fmt.Fprintln(in.IO.Err, banner)
	replOpts := *fileOptions
	replOpts.LoadBindsGlobally = true
	for k, v := range in.predeclared {
		if _, ok := in.globals[k]; !ok {
			in.globals[k] = v
		}
	}
	in.Env.Interactive = true
	// One SIGINT handler for the whole session: SIGINT never ends the
	// prompt, whatever it is doing.
	keys, _ := ed.(keyWatcher)
	defer onSIGINT(func() {
		if keys == nil || !keys.interrupt() {
			in.intr.interrupt()
		}
	})()
	if keys != nil {
		in.keys = keys
		defer func() { in.keys = nil }()
	}
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
	for {
		prompt := ">>> "
		eof, aborted := false, false
		readline := func() ([]byte, error) {
			line, err := ed.Prompt(prompt)
			prompt = "... "
			if err != nil {
				// The parser wraps these errors, so remember what happened.
				eof = err == io.EOF
				aborted = errors.Is(err, ErrAborted)
				return nil, err
			}
			ed.AppendHistory(line)
			return []byte(line + "\n"), nil
		}
		f, err := replOpts.ParseCompoundStmt("<stdin>", readline)
		if err != nil {
			switch {
			case eof:
				fmt.Fprintln(in.IO.Err)
				return ExitOK
			case aborted:
				continue
			}
			fmt.Fprintln(in.IO.Err, FormatError(err, false, false))
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

// evalChunk evaluates one statement typed at the prompt, displays an
// expression's value and keeps it in `_`.
func (in *Interp) evalChunk(f *syntax.File) (code int, stop bool) {
	var err error
	var interrupted bool
	if expr := soleExpr(f); expr != nil {
		err, interrupted = in.run(func(t *starlark.Thread) error {
			v, err := starlark.EvalExprOptions(f.Options, t, expr, in.env())
			if err != nil {
				return err
			}
			in.globals["_"] = v
			return in.Display.Show(v)
		})
	} else {
		err, interrupted = in.run(func(t *starlark.Thread) error {
			return starlark.ExecREPLChunk(f, t, in.globals)
		})
	}
	if err == nil && !interrupted {
		return 0, false
	}
	var exit *builtins.ExitError
	if errors.As(err, &exit) {
		return exit.Code, true
	}
	fmt.Fprintln(in.IO.Err, FormatError(err, interrupted, false))
	return 0, false
}

// env is the prompt's environment: ExecREPLChunk has no predeclared
// scope, so REPL starts by copying the builtins into the globals.
func (in *Interp) env() starlark.StringDict { return in.globals }
