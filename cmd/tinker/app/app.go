// Package app is the tinker command line: global flags, the prompt, scripts,
// -c, and the subcommands compatible with the official CLI. Each subcommand
// is a thin translation into a builtin call.
package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/config"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/term"
	"github.com/tinkershell/tinker/shell"
	starlarktime "go.starlark.net/lib/time"
)

// Version is the program version; release builds set it with -ldflags.
var Version = "0.1.0"

// options are the global flags, valid before any command.
type options struct {
	format  string // "table" | "json"
	command string // -c text
	hasCmd  bool
	local   bool
	models  []string // --model NAME=DIR for the local server's sampler
	profile string   // --profile NAME
	// formatSet: -f was given, so a profile's format does not apply.
	formatSet bool
	// getenv reads the environment with the active profile's values filled
	// in (applyProfile); nil means os.Getenv.
	getenv   func(string) string
	resolved *config.Settings
	help     bool
	version  bool
}

// Main runs tinker with args (without the program name) and returns the
// exit status.
func Main(args []string, io *term.IO) (code int) {
	defer func() {
		// A bug must not dump a Go stack trace on users: one line, exit 1.
		if r := recover(); r != nil {
			fmt.Fprintf(io.Err, "tinker: internal error: %v (please report this)\n", r)
			code = shell.ExitError
		}
	}()
	mainArgs = args
	opts, rest, err := parseGlobal(args)
	if err != nil {
		return usageError(io, "tinker", err.Error())
	}
	switch {
	case opts.help:
		fmt.Fprint(io.Out, rootHelp())
		return shell.ExitOK
	case opts.version:
		fmt.Fprintf(io.Out, "tinker %s\n", Version)
		return shell.ExitOK
	}
	now, err := clock()
	if err != nil {
		fmt.Fprintf(io.Err, "Error: %v\n", err)
		return shell.ExitUsage
	}
	if !opts.hasCmd && len(rest) > 0 && rest[0] == completeWord {
		return runDynamicCompletion(io, opts, rest[1:], now)
	}
	if !opts.hasCmd && len(rest) > 0 {
		if cmd := root.sub(rest[0]); cmd != nil && !looksLikeScript(rest[0]) {
			return dispatch(io, opts, root, cmd, "tinker "+cmd.Name, rest[1:], now)
		}
	}
	if !opts.hasCmd && len(rest) > 0 && !looksLikeScript(rest[0]) {
		if _, err := os.Stat(rest[0]); err != nil {
			return usageError(io, "tinker", noSuchCommand(rest[0], root.subNames()))
		}
	}
	return runStarlark(io, opts, rest, now)
}

// looksLikeScript tells a script path apart from a command word.
func looksLikeScript(arg string) bool {
	return strings.HasSuffix(arg, ".star") || strings.ContainsRune(arg, '/')
}

// parseGlobal reads the root flags (rootFlags) up to the first argument
// that is not an option; -c ends them too, its text being the program.
// Command lines may repeat the global options after the command words
// (see globalAnywhere).
func parseGlobal(args []string) (options, []string, error) {
	o := options{format: "table"}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		spec, name, val, hasVal := matchFlag(rootFlags, a)
		if spec == nil {
			return o, nil, noSuchOption(name, rootFlags)
		}
		if spec.Kind != flagBool && !hasVal {
			if i+1 >= len(args) {
				return o, nil, fmt.Errorf("Option '%s' requires an argument.", name)
			}
			i++
			val = args[i]
		}
		if spec.key() == "c" {
			o.command, o.hasCmd = val, true
			return o, args[i+1:], nil
		}
		if err := o.set(spec, val); err != nil {
			return o, nil, err
		}
	}
	return o, args[i:], nil
}

// matchFlag finds the spec an option word names: --long, -s, --long=value,
// -s=value, or -sVALUE for a short flag that takes a value. name is the
// option as typed (without any value), for messages. It sits here, beside
// parseGlobal, with the rest of what `tinker -c` runs of this package:
// the linker lays a package's functions out file by file, and in cli.go
// it was one more 64 KB stretch of code to fault in at every start.
func matchFlag(specs []flagSpec, a string) (spec *flagSpec, name, val string, hasVal bool) {
	name, val, hasVal = strings.Cut(a, "=")
	for j := range specs {
		s := &specs[j]
		if (s.Long != "" && name == s.Long) || (s.Short != "" && name == s.Short) {
			return s, name, val, hasVal
		}
		if !strings.HasPrefix(a, "--") && s.Short != "" && s.Kind != flagBool && strings.HasPrefix(a, s.Short) && len(a) > len(s.Short) {
			return s, s.Short, a[len(s.Short):], true
		}
	}
	return nil, name, val, hasVal
}

// set records the global option spec with its value.
func (o *options) set(spec *flagSpec, val string) error {
	switch spec.key() {
	case "help":
		o.help = true
	case "version":
		o.version = true
	case "local":
		o.local = true
	case "model":
		o.models = append(o.models, val)
	case "profile":
		o.profile = val
	case "format":
		if val != "table" && val != "json" {
			return fmt.Errorf("Invalid value for '--format' / '-f': '%s' is not one of 'table', 'json'.", val)
		}
		o.format, o.formatSet = val, true
	}
	return nil
}

// applyProfile loads the profiles file and applies the settings in force
// (lib/config): local and format from flags or the profile, and base_url
// and the credential through o.getenv, where the environment overrides the
// profile.
func (o *options) applyProfile() error {
	f, err := config.Load(config.Path(os.Getenv))
	if err != nil {
		return err
	}
	flags := config.Flags{Profile: o.profile, Local: o.local}
	if o.formatSet {
		flags.Format = o.format
	}
	s, err := config.Resolve(f, flags, os.Getenv)
	if err != nil {
		return err
	}
	o.resolved, o.getenv = s, s.Getenv
	o.local, o.format = s.Local.Value, s.Format.Value
	return nil
}

// env reads the environment as the active profile amends it.
func (o *options) env(k string) string {
	if o.getenv == nil {
		return os.Getenv(k)
	}
	return o.getenv(k)
}

// usageError prints a usage block like the official CLI and returns 2.
func usageError(io *term.IO, path, msg string) int {
	fmt.Fprintf(io.Err, "Usage: %s [OPTIONS] COMMAND [ARGS]...\nTry '%s -h' for help.\n\nError: %s\n", path, path, msg)
	return shell.ExitUsage
}

// clock returns the time source: TINKER_NOW pins it (RFC 3339) so output
// with relative times is reproducible.
func clock() (func() time.Time, error) {
	v := os.Getenv("TINKER_NOW")
	if v == "" {
		return time.Now, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, fmt.Errorf("TINKER_NOW=%q is not an RFC 3339 time (e.g. 2026-01-02T15:04:05Z)", v)
	}
	return func() time.Time { return t }, nil
}

// newInterp builds an interpreter with the display settings for io.
func newInterp(io *term.IO, opts options, now func() time.Time, backend builtins.Backend) *shell.Interp {
	env := &builtins.Env{
		Now:        now,
		Notices:    io.Err,
		NoticesTTY: io.ErrTTY,
		Width:      io.Width,
		Version:    Version,
		Backend:    backend,
	}
	starlarktime.NowFunc = now // time.now() in Starlark follows TINKER_NOW too
	disp := &shell.Display{IO: io, JSON: opts.format == "json", Now: now, Elide: true}
	return shell.New(io, env, disp)
}

func runStarlark(io *term.IO, opts options, rest []string, now func() time.Time) int {
	if err := opts.applyProfile(); err != nil {
		fmt.Fprintf(io.Err, "Error: %v\n", err)
		return shell.ExitUsage
	}
	backend, cleanup, err := chooseBackend(io, opts, now)
	if err != nil { // only flag problems (--model) fail here
		fmt.Fprintf(io.Err, "Error: %v\n", err)
		return shell.ExitUsage
	}
	defer cleanup()
	in := newInterp(io, opts, now, backend)
	defer in.Env.Close() // ends the Tinker session, if one was opened
	report := func(err error, interrupted, backtrace bool) int {
		if (err != nil || interrupted) && !isExit(err) {
			fmt.Fprintln(io.Err, shell.FormatError(err, interrupted, backtrace))
		}
		return shell.ExitCode(err, interrupted)
	}
	switch {
	case opts.hasCmd:
		in.SetArgv(append([]string{"-c"}, rest...))
		err, intr := in.EvalText("<command>", opts.command)
		return report(err, intr, false)
	case len(rest) > 0:
		in.SetArgv(rest)
		err, intr := in.RunFile(rest[0])
		return report(err, intr, true)
	case !io.InTTY:
		src, err := readAll(io.In)
		if err != nil {
			fmt.Fprintf(io.Err, "Error: reading stdin: %v\n", err)
			return shell.ExitError
		}
		in.SetArgv([]string{"-"})
		err, intr := in.RunSource("<stdin>", src)
		return report(err, intr, true)
	}
	in.SetArgv(nil)
	ed := shell.NewLinerEditor(shell.HistoryPath(), in.Complete)
	profile := ""
	if opts.resolved != nil && opts.resolved.Profile.Value != "" {
		profile = " · profile: " + opts.resolved.Profile.Value
	}
	banner := fmt.Sprintf("tinker %s · backend: %s%s · help() lists builtins, Ctrl-D exits", Version, backend.Name(), profile)
	if rb, ok := backend.(*remoteBackend); ok && rb.start != nil {
		// A new user's first question offline: which model can I use?
		banner += fmt.Sprintf("\nmodels that need no download: %s, %s (random weights; models() lists all)", models.TinyLlama, models.TinyQwen3)
	}
	return in.REPL(ed, banner)
}

func readAll(r io.Reader) ([]byte, error) { return io.ReadAll(r) }

func isExit(err error) bool {
	var e *builtins.ExitError
	return errors.As(err, &e)
}
