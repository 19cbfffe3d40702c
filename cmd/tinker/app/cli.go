package app

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tinkershell/tinker/lib/term"
	"github.com/tinkershell/tinker/shell"
)

// The subcommand parser reproduces the official CLI's (Click's) usage
// errors and help layout, so scripts written against it keep working.

type flagKind int

const (
	flagBool flagKind = iota
	flagString
	flagInt
	flagMulti // repeatable string
)

type flagSpec struct {
	Long    string // "--limit"
	Short   string // "-c" (optional)
	Kind    flagKind
	Metavar string // "INTEGER", "TEXT"
	Help    string
}

type argSpec struct {
	Name     string // upper-case metavar, e.g. "RUN_ID"
	Optional bool
	Variadic bool
}

// command is a runnable command or a group of subcommands.
type command struct {
	Name    string
	Summary string
	Help    string // longer description for -h
	Args    []argSpec
	Flags   []flagSpec
	Sub     map[string]*command
	Run     func(c *invocation) int
}

// invocation is one parsed command line.
type invocation struct {
	io      *term.IO
	opts    options
	now     func() time.Time
	path    string
	args    []string
	flags   map[string][]string // by long name, without dashes
	present map[string]bool
}

func (c *invocation) str(name string) string {
	v := c.flags[name]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func (c *invocation) has(name string) bool { return c.present[name] }

func (c *invocation) intOr(name string, def int) int {
	if !c.present[name] {
		return def
	}
	n, _ := strconv.Atoi(c.str(name)) // validated while parsing
	return n
}

func (c *invocation) multi(name string) []string { return c.flags[name] }

// formatFlag is accepted after any subcommand too (a deliberate addition).
var formatFlag = flagSpec{Long: "--format", Short: "-f", Kind: flagString, Metavar: "[table|json]", Help: "Output format."}

var helpFlag = flagSpec{Long: "--help", Short: "-h", Kind: flagBool, Help: "Show this message and exit."}

func runCommand(io *term.IO, opts options, cmd *command, args []string, now func() time.Time) int {
	return dispatch(io, opts, cmd, "tinker "+cmd.Name, args, now)
}

func dispatch(io *term.IO, opts options, cmd *command, path string, args []string, now func() time.Time) int {
	if cmd.Sub != nil {
		if len(args) == 0 {
			fmt.Fprint(io.Err, groupHelp(cmd, path))
			return shell.ExitUsage
		}
		a := args[0]
		if a == "-h" || a == "--help" {
			fmt.Fprint(io.Out, groupHelp(cmd, path))
			return shell.ExitOK
		}
		if strings.HasPrefix(a, "-") {
			return usageError(io, path, "No such option: "+a)
		}
		sub, ok := cmd.Sub[a]
		if !ok {
			return usageError(io, path, fmt.Sprintf("No such command '%s'.", a))
		}
		return dispatch(io, opts, sub, path+" "+a, args[1:], now)
	}
	usageError := func(io *term.IO, path, msg string) int { return leafUsageError(io, cmd, path, msg) }
	inv := &invocation{io: io, opts: opts, now: now, path: path, flags: map[string][]string{}, present: map[string]bool{}}
	specs := append(append([]flagSpec(nil), cmd.Flags...), formatFlag, helpFlag)
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		var spec *flagSpec
		for j := range specs {
			s := &specs[j]
			if name == s.Long || (s.Short != "" && name == s.Short) {
				spec = s
				break
			}
			if !strings.HasPrefix(a, "--") && s.Short != "" && s.Kind != flagBool && strings.HasPrefix(a, s.Short) && len(a) > len(s.Short) {
				spec, val, hasVal, name = s, a[len(s.Short):], true, s.Short
				break
			}
		}
		if spec == nil {
			msg := "No such option: " + name
			if sug := suggest(name, specs); sug != "" {
				msg += " Did you mean " + sug + "?"
			}
			return usageError(io, path, msg)
		}
		key := strings.TrimPrefix(spec.Long, "--")
		if spec.Kind == flagBool {
			if hasVal {
				return usageError(io, path, fmt.Sprintf("Option '%s' does not take a value.", spec.Long))
			}
			inv.present[key] = true
			inv.flags[key] = append(inv.flags[key], "true")
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				fmt.Fprintf(io.Err, "Error: Option '%s' requires an argument.\n", name)
				return shell.ExitUsage
			}
			i++
			val = args[i]
		}
		if spec.Kind == flagInt {
			if _, err := strconv.Atoi(strings.TrimSpace(val)); err != nil {
				return usageError(io, path, fmt.Sprintf("Invalid value for '%s': '%s' is not a valid integer.", flagLabel(spec), val))
			}
			val = strings.TrimSpace(val)
		}
		inv.present[key] = true
		inv.flags[key] = append(inv.flags[key], val)
	}
	if inv.present["help"] {
		fmt.Fprint(io.Out, commandHelp(cmd, path))
		return shell.ExitOK
	}
	if inv.present["format"] {
		f := inv.str("format")
		if f != "table" && f != "json" {
			return usageError(io, path, fmt.Sprintf("Invalid value for '--format' / '-f': '%s' is not one of 'table', 'json'.", f))
		}
		inv.opts.format = f
	}
	// Bind positionals.
	n := 0
	for _, spec := range cmd.Args {
		if spec.Variadic {
			n = len(positional)
			break
		}
		if n >= len(positional) {
			if !spec.Optional {
				return usageError(io, path, fmt.Sprintf("Missing argument '%s'.", spec.Name))
			}
			break
		}
		n++
	}
	if n < len(positional) {
		return usageError(io, path, fmt.Sprintf("Got unexpected extra argument (%s)", strings.Join(positional[n:], " ")))
	}
	inv.args = positional
	return cmd.Run(inv)
}

func flagLabel(s *flagSpec) string {
	if s.Short != "" && s.Long != "--format" {
		return s.Long + "' / '" + s.Short
	}
	return s.Long
}

// suggest proposes the closest long option, as Click does.
func suggest(name string, specs []flagSpec) string {
	best, bestD := "", 3
	for _, s := range specs {
		if d := editDistance(name, s.Long); d < bestD {
			best, bestD = s.Long, d
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

func groupHelp(cmd *command, path string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s [OPTIONS] COMMAND [ARGS]...\n\n", path)
	if cmd.Help != "" {
		fmt.Fprintf(&b, "  %s\n\n", cmd.Help)
	}
	b.WriteString("Options:\n  -h, --help  Show this message and exit.\n\nCommands:\n")
	names := make([]string, 0, len(cmd.Sub))
	width := 0
	for n := range cmd.Sub {
		names = append(names, n)
		width = max(width, len(n))
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, n, cmd.Sub[n].Summary)
	}
	return b.String()
}

// commandUsage is the Usage line of a leaf command.
func commandUsage(cmd *command, path string) string {
	usage := path + " [OPTIONS]"
	for _, a := range cmd.Args {
		switch {
		case a.Variadic:
			usage += " [" + a.Name + "]..."
		case a.Optional:
			usage += " [" + a.Name + "]"
		default:
			usage += " " + a.Name
		}
	}
	return usage
}

func leafUsageError(io *term.IO, cmd *command, path, msg string) int {
	fmt.Fprintf(io.Err, "Usage: %s\nTry '%s -h' for help.\n\nError: %s\n", commandUsage(cmd, path), path, msg)
	return shell.ExitUsage
}

func commandHelp(cmd *command, path string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n\n", commandUsage(cmd, path))
	help := cmd.Help
	if help == "" {
		help = cmd.Summary
	}
	fmt.Fprintf(&b, "  %s\n\nOptions:\n", strings.ReplaceAll(help, "\n", "\n  "))
	specs := append(append([]flagSpec(nil), cmd.Flags...), formatFlag, helpFlag)
	labels := make([]string, len(specs))
	width := 0
	for i, s := range specs {
		l := s.Long
		if s.Short != "" {
			l = s.Short + ", " + s.Long
		}
		if s.Kind != flagBool {
			l += " " + s.Metavar
		}
		labels[i] = l
		width = max(width, len(l))
	}
	for i, s := range specs {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, labels[i], s.Help)
	}
	return b.String()
}

// writeOut is a small helper for commands printing text.
func writeOut(w io.Writer, format string, args ...any) { fmt.Fprintf(w, format, args...) }
