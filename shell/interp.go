// Package shell runs tinker's Starlark: the interactive prompt, scripts,
// `-c` text and programs on stdin, and the display of values.
package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode/utf8"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/term"
	"github.com/tinkershell/tinker/lib/train"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Exit statuses of scripts, -c and subcommands.
const (
	ExitOK          = 0
	ExitError       = 1 // runtime error, syntax error, fail()
	ExitUsage       = 2 // bad flags, unreadable script
	ExitInterrupted = 130
)

// fileOptions enables the language features tinker programs may use.
var fileOptions = &syntax.FileOptions{
	Set:             true,
	While:           true,
	TopLevelControl: true,
	GlobalReassign:  true,
	Recursion:       true,
}

// Interp is one Starlark interpreter with its globals, module cache and
// display settings.
type Interp struct {
	IO      *term.IO
	Env     *builtins.Env
	Display *Display

	predeclared starlark.StringDict
	globals     starlark.StringDict
	thread      *starlark.Thread
	intr        interrupter
	keys        keyWatcher      // the prompt's keyboard; nil outside the prompt
	memLimit    int64           // heap bytes an evaluation may grow to (bounds.go)
	memErr      error           // a bad $TINKER_MEMORY_LIMIT, reported by every evaluation
	shadowed    map[string]bool // modules the prompt warned were hidden
	cands       promptCandidates

	mu      sync.Mutex
	modules map[string]*module // load cache by absolute path
	loading []string           // load stack for cycle reports
}

type module struct {
	globals starlark.StringDict
	err     error
}

// New makes an interpreter writing to io.
func New(io *term.IO, env *builtins.Env, disp *Display) *Interp {
	in := &Interp{IO: io, Env: env, Display: disp, modules: map[string]*module{}}
	in.predeclared = builtins.Universe()
	in.predeclared["print"] = starlark.NewBuiltin("print", in.print)
	in.memLimit, in.memErr = memoryLimit()
	if in.memErr == nil {
		setGCLimit(in.memLimit)
	}
	boundUniverse(in.predeclared, func() int64 { return in.memLimit })
	in.globals = starlark.StringDict{}
	in.thread = in.newThread("main")
	return in
}

func (in *Interp) newThread(name string) *starlark.Thread {
	t := &starlark.Thread{
		Name:  name,
		Load:  in.load,
		Print: func(_ *starlark.Thread, msg string) { fmt.Fprintln(in.IO.Out, msg) },
	}
	builtins.Attach(t, in.Env)
	return t
}

// Globals returns the interpreter's global variables (for completion).
func (in *Interp) Globals() starlark.StringDict { return in.globals }

// Predeclared returns the builtins visible to every program.
func (in *Interp) Predeclared() starlark.StringDict { return in.predeclared }

// SetArgv defines the argv global for scripts.
func (in *Interp) SetArgv(args []string) {
	l := make([]starlark.Value, len(args))
	for i, a := range args {
		l[i] = starlark.String(a)
	}
	in.predeclared["argv"] = starlark.NewList(l)
}

// print renders a lone displayable value as the prompt would; otherwise it
// behaves like Starlark's print. stderr=True writes the text to stderr, for
// a script's usage and error messages.
func (in *Interp) print(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	sep := " "
	toErr := false
	if err := starlark.UnpackArgs("print", nil, kwargs, "sep?", &sep, "stderr?", &toErr); err != nil {
		return nil, err
	}
	out := in.IO.Out
	if toErr {
		out = in.IO.Err
	} else if len(args) == 1 && in.Display.IsRich(args[0]) {
		return starlark.None, in.Display.Show(args[0])
	}
	var sb strings.Builder
	for i, a := range args {
		if i > 0 {
			sb.WriteString(sep)
		}
		if s, ok := starlark.AsString(a); ok {
			sb.WriteString(s)
		} else if err := checkRenderable(builtins.ContextOf(thread), a); err != nil {
			return nil, err
		} else {
			sb.WriteString(a.String())
		}
	}
	sb.WriteByte('\n')
	_, err := fmt.Fprint(out, sb.String())
	return starlark.None, err
}

// load resolves a module path relative to the loading file, caches the
// result per absolute path and reports cycles with the whole chain.
func (in *Interp) load(thread *starlark.Thread, name string) (starlark.StringDict, error) {
	from := thread.CallFrame(0).Pos.Filename()
	base := "."
	if from != "" && !strings.HasPrefix(from, "<") {
		base = filepath.Dir(from)
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(base, name)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("load %q: %w", name, err)
	}
	in.mu.Lock()
	if m, ok := in.modules[abs]; ok {
		in.mu.Unlock()
		if m == nil {
			chain := append(append([]string(nil), in.loading...), abs)
			for i := range chain {
				chain[i] = relPath(chain[i])
			}
			return nil, fmt.Errorf("load cycle: %s", strings.Join(chain, " -> "))
		}
		return m.globals, m.err
	}
	in.modules[abs] = nil
	in.loading = append(in.loading, abs)
	in.mu.Unlock()

	globals, err := func() (starlark.StringDict, error) {
		src, err := readSource(path)
		if err != nil {
			// A bad module is a runtime error of the loading program, not a usage error.
			return nil, fmt.Errorf("%s", err.Error())
		}
		t := in.newThread("load " + name)
		builtins.SetContext(t, builtins.ContextOf(thread)) // the loading evaluation's
		return starlark.ExecFileOptions(fileOptions, t, path, src, in.predeclared)
	}()

	in.mu.Lock()
	in.modules[abs] = &module{globals, err}
	in.loading = in.loading[:len(in.loading)-1]
	in.mu.Unlock()
	return globals, err
}

func relPath(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
	}
	return p
}

// UsageError marks problems with how tinker was invoked (exit 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// readSource reads a script, refusing directories and invalid UTF-8 with
// errors that say what to do.
func readSource(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &UsageError{fmt.Sprintf("%s: no such file", path)}
		}
		return nil, &UsageError{err.Error()}
	}
	if st.IsDir() {
		return nil, &UsageError{fmt.Sprintf("%s: is a directory, not a script; give a .star file", path)}
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, &UsageError{err.Error()}
	}
	if err := checkUTF8(path, src); err != nil {
		return nil, err
	}
	return src, nil
}

func checkUTF8(name string, src []byte) error {
	if utf8.Valid(src) {
		return nil
	}
	line, col := 1, 1
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return &UsageError{fmt.Sprintf("%s:%d:%d: invalid UTF-8; save the file as UTF-8", name, line, col)}
}

// run executes fn with Ctrl-C wired to cancel both the Starlark thread and
// the context handed to Go builtins. It reports whether it was interrupted.
// At the prompt SIGINT is handled for the whole session (see REPL); a
// script's handler lasts as long as its evaluation.
func (in *Interp) run(fn func(*starlark.Thread) error) (err error, interrupted bool) {
	hard, stopHard := context.WithCancel(context.Background())
	defer stopHard()
	ctx, cancel := context.WithCancel(train.WithHardStop(hard, hard))
	defer cancel()
	if in.memErr != nil {
		return in.memErr, false
	}
	var evalCtx context.Context = ctx
	if in.keys == nil {
		// A script stops on SIGTERM as on Ctrl-C, so downloads clean up.
		arm, stop := lazily(func() func() { return onSignal(in.intr.interrupt, os.Interrupt, syscall.SIGTERM) })
		defer stop()
		evalCtx = armingContext{ctx, arm}
	}
	builtins.SetContext(in.thread, evalCtx) // this evaluation's, cleared after it
	defer builtins.SetContext(in.thread, nil)
	in.intr.begin(func() {
		cancel()
		in.thread.Cancel("interrupted")
	}, stopHard)
	var outOfMemory atomic.Bool
	defer watchMemory(in.memLimit, func() {
		outOfMemory.Store(true)
		cancel()
		in.thread.Cancel("out of memory")
	})()
	if in.keys != nil {
		stop := in.keys.watch(in.intr.interrupt)
		err = fn(in.thread)
		stop()
	} else {
		err = fn(in.thread)
	}
	interrupted = in.intr.end()
	in.thread.Uncancel()
	if outOfMemory.Load() && !interrupted {
		err = &MemoryError{Limit: in.memLimit}
	}
	return err, interrupted
}

// ExecProgram runs src (a file's content) as a program named filename.
func (in *Interp) ExecProgram(filename string, src []byte) (err error, interrupted bool) {
	return in.run(func(t *starlark.Thread) error {
		g, err := starlark.ExecFileOptions(fileOptions, t, filename, src, in.predeclared)
		for k, v := range g {
			in.globals[k] = v
		}
		return err
	})
}

// RunFile runs a script file.
func (in *Interp) RunFile(path string) (err error, interrupted bool) {
	src, err := readSource(path)
	if err != nil {
		return err, false
	}
	abs, _ := filepath.Abs(path)
	in.mu.Lock()
	in.modules[abs] = nil // a script that loads itself is a cycle
	in.loading = append(in.loading, abs)
	in.mu.Unlock()
	return in.ExecProgram(path, src)
}

// EvalText runs -c text: a program whose last statement is an expression
// has that expression's value displayed as the prompt would, except that a
// string prints raw as print() prints it, so that $(tinker -c ...) captures
// the text; anything else is executed as a program.
func (in *Interp) EvalText(filename, text string) (err error, interrupted bool) {
	if err := checkUTF8(filename, []byte(text)); err != nil {
		return err, false
	}
	f, perr := fileOptions.Parse(filename, text, 0)
	if perr != nil {
		return perr, false
	}
	var last *syntax.ExprStmt
	if n := len(f.Stmts); n > 0 {
		last, _ = f.Stmts[n-1].(*syntax.ExprStmt)
	}
	if last == nil {
		return in.ExecProgram(filename, []byte(text))
	}
	return in.run(func(t *starlark.Thread) error {
		// load() binds globally here, so the final expression sees its names.
		env, err := in.execPrefix(t, &syntax.File{Path: f.Path, Stmts: f.Stmts[:len(f.Stmts)-1], Options: replOpts()})
		if err != nil {
			return err
		}
		v, err := starlark.EvalExprOptions(fileOptions, t, last.X, env)
		if err != nil {
			return err
		}
		if s, ok := v.(starlark.String); ok && !in.Display.JSON {
			_, err := fmt.Fprintln(in.IO.Out, string(s))
			return err
		}
		return in.Display.Show(v)
	})
}

// execPrefix runs the statements before -c text's final expression and
// returns the environment that expression sees: the builtins and the
// program's globals.
func (in *Interp) execPrefix(t *starlark.Thread, f *syntax.File) (starlark.StringDict, error) {
	if len(f.Stmts) == 0 {
		return in.predeclared, nil
	}
	prog, err := starlark.FileProgram(f, in.predeclared.Has)
	if err != nil {
		return nil, err
	}
	g, err := prog.Init(t, in.predeclared)
	env := make(starlark.StringDict, len(in.predeclared)+len(g))
	for k, v := range in.predeclared {
		env[k] = v
	}
	for k, v := range g {
		in.globals[k], env[k] = v, v
	}
	return env, err
}

func soleExpr(f *syntax.File) syntax.Expr {
	if len(f.Stmts) == 1 {
		if stmt, ok := f.Stmts[0].(*syntax.ExprStmt); ok {
			return stmt.X
		}
	}
	return nil
}

// ExitCode maps an evaluation outcome to the process exit status.
func ExitCode(err error, interrupted bool) int {
	var exit *builtins.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.Code
	case interrupted:
		return ExitInterrupted
	case err == nil:
		return ExitOK
	}
	var usage *UsageError
	if errors.As(err, &usage) {
		return ExitUsage
	}
	return ExitError
}

// FormatError renders an error for stderr. Scripts get the Starlark
// backtrace of errors in their own code; the prompt and -c, and a builtin's
// expected error (builtins.Expected), get the innermost position and message.
// Control characters (a checkpoint name from the service may hold ESC)
// are shown escaped.
func FormatError(err error, interrupted, backtrace bool) string {
	return render.PrintableLines(formatError(err, interrupted, backtrace))
}

func formatError(err error, interrupted, backtrace bool) string {
	if interrupted {
		return "interrupted"
	}
	var evalErr *starlark.EvalError
	if errors.As(err, &evalErr) {
		if backtrace && len(evalErr.CallStack) > 1 && !builtins.Expected(evalErr.Unwrap()) {
			bt := foldedBacktrace(evalErr)
			if hinted := builtins.AttrHint(evalErr.Msg); hinted != evalErr.Msg {
				bt = strings.TrimSuffix(bt, evalErr.Msg) + hinted
			}
			return bt
		}
		// The innermost frame with a source position (not a builtin).
		pos := ""
		for i := len(evalErr.CallStack) - 1; i >= 0; i-- {
			if p := evalErr.CallStack[i].Pos; p.Filename() != "<builtin>" {
				pos = p.String() + ": "
				break
			}
		}
		msg := builtins.AttrHint(evalErr.Msg)
		if n := len(evalErr.CallStack); n > 0 && evalErr.CallStack[n-1].Pos.Filename() == "<builtin>" {
			if name := evalErr.CallStack[n-1].Name; !strings.HasPrefix(msg, name+":") {
				msg = name + ": " + msg
			}
		}
		return pos + msg
	}
	var serr syntax.Error
	if errors.As(err, &serr) {
		return serr.Pos.String() + ": " + serr.Msg
	}
	var rerrs resolve.ErrorList
	if errors.As(err, &rerrs) && len(rerrs) > 0 {
		return resolveMessage(rerrs)
	}
	return err.Error()
}

// foldRepeats shortens a backtrace the way Python does: after three equal
// lines in a row, the rest of the run becomes one line saying how many
// there were (unbounded recursion would otherwise print 100,000 frames).
func foldRepeats(bt string) string {
	lines := strings.Split(bt, "\n")
	var out []string
	for i := 0; i < len(lines); {
		j := i + 1
		for j < len(lines) && lines[j] == lines[i] {
			j++
		}
		for k := i; k < min(j, i+3); k++ {
			out = append(out, lines[k])
		}
		if n := j - i - 3; n > 0 {
			out = append(out, fmt.Sprintf("  [previous line repeated %d more times]", n))
		}
		i = j
	}
	return strings.Join(out, "\n")
}

// RunSource runs a whole program read from somewhere other than a file
// (stdin), after checking it is UTF-8.
func (in *Interp) RunSource(name string, src []byte) (err error, interrupted bool) {
	if err := checkUTF8(name, src); err != nil {
		return err, false
	}
	return in.ExecProgram(name, src)
}
