package app

import (
	"errors"
	"fmt"
	nearest "github.com/tinkershell/tinker/lib/suggest"
	"slices"
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
	flagPath // a string completed as a file name
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
	Choices  []string // the values allowed, if limited
}

// command is a runnable command or a group of subcommands. A leaf has
// exactly one of Run (no backend needed) and API (run by runAPI with a
// backend, Ctrl-C handling and the official CLI's error report). A leaf
// may have subcommands too (tinker serve, tinker serve import): a first
// argument naming one runs it.
type command struct {
	Name    string
	Summary string
	Help    string // longer description for -h
	Args    []argSpec
	Flags   []flagSpec
	Shared  []flagSpec // flags it shares with other commands, after its own
	Sub     []*command
	Run     func(c *invocation) int
	API     func(r *apiRun) error
}

// flags returns a new slice of cmd's own flags, then those it shares. The
// tables stay separate, rather than one appended to the other in a
// package-level var, so that they are static data, not built at every start.
func (cmd *command) flags() []flagSpec {
	return append(append([]flagSpec(nil), cmd.Flags...), cmd.Shared...)
}

// isGroup reports whether cmd only holds subcommands.
func (cmd *command) isGroup() bool { return cmd.Sub != nil && cmd.Run == nil && cmd.API == nil }

// sub returns the subcommand called name, or nil.
func (cmd *command) sub(name string) *command {
	for _, s := range cmd.Sub {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// subNames are the subcommands' names in sorted order.
func (cmd *command) subNames() []string {
	names := make([]string, len(cmd.Sub))
	for i, s := range cmd.Sub {
		names[i] = s.Name
	}
	sort.Strings(names)
	return names
}

// key is the name a flag's values are stored and read under: the long
// name without dashes, or the short one for a flag that has no long form.
func (s *flagSpec) key() string {
	if s.Long != "" {
		return strings.TrimPrefix(s.Long, "--")
	}
	return strings.TrimPrefix(s.Short, "-")
}

// invocation is one parsed command line.
type invocation struct {
	io    *term.IO
	opts  options
	now   func() time.Time
	root  *command // the command table, for completion
	cmd   *command
	path  string
	args  []string
	flags map[string][]string // by key
}

// values returns the values given for the flag called name. Reading a flag
// the command does not declare is a programming error: it panics (Main
// reports it as an internal error), and TestFlagReadsAreDeclared finds
// such reads before they ship.
func (c *invocation) values(name string) []string {
	for _, s := range leafFlags(c.cmd) {
		if s.key() == name {
			return c.flags[name]
		}
	}
	panic(fmt.Sprintf("%s reads undeclared flag --%s", c.path, name))
}

func (c *invocation) str(name string) string {
	v := c.values(name)
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func (c *invocation) has(name string) bool { return len(c.values(name)) > 0 }

func (c *invocation) intOr(name string, def int) int {
	if !c.has(name) {
		return def
	}
	n, _ := strconv.Atoi(c.str(name)) // validated while parsing
	return n
}

func (c *invocation) multi(name string) []string { return c.values(name) }

// float reads a FLOAT flag, which the parser leaves unchecked.
func (c *invocation) float(name string, def float64) (float64, error) {
	if !c.has(name) {
		return def, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(c.str(name)), 64)
	if err != nil {
		return 0, fmt.Errorf("Invalid value for '--%s': '%s' is not a valid float.", name, c.str(name))
	}
	return f, nil
}

// usageError reports a usage problem of the running leaf command.
func (c *invocation) usageError(msg string) int { return leafUsageError(c.io, c.cmd, c.path, msg) }

// leafFlags are the options a command accepts: its own, then -f and -h;
// a group takes only -h.
func leafFlags(cmd *command) []flagSpec {
	if cmd.isGroup() {
		return []flagSpec{helpFlag}
	}
	if ownsFormat(cmd) { // -f still reaches the global option
		return append(cmd.flags(), helpFlag)
	}
	return append(cmd.flags(), formatFlag, helpFlag)
}

// formatFlag is accepted after any subcommand too (a deliberate addition).
var formatFlag = flagSpec{Long: "--format", Short: "-f", Kind: flagString, Metavar: "[table|json]", Help: "Output format."}

var helpFlag = flagSpec{Long: "--help", Short: "-h", Kind: flagBool, Help: "Show this message and exit."}

// globalAnywhere are the root options a command line may also give after
// its command words (tinker checkpoint list --local): all but -c, --version
// and -h, whose meaning depends on coming first. A command's own option of
// the same name wins.
func globalAnywhere() []flagSpec {
	var out []flagSpec
	for _, s := range rootFlags {
		switch s.key() {
		case "c", "version", "help":
			continue
		}
		out = append(out, s)
	}
	return out
}

// takeGlobal applies args[0], if it is a global option given after a
// command word, to opts; n is how many arguments it took (0: not one).
func takeGlobal(opts *options, args []string) (n int, err error) {
	spec, name, val, hasVal := matchFlag(globalAnywhere(), args[0])
	if spec == nil {
		return 0, nil
	}
	n = 1
	if spec.Kind == flagBool && hasVal {
		return 0, fmt.Errorf("Option '%s' does not take a value.", name)
	}
	if spec.Kind != flagBool && !hasVal {
		if len(args) < 2 {
			return 0, fmt.Errorf("Option '%s' requires an argument.", name)
		}
		val, n = args[1], 2
	}
	return n, opts.set(spec, val)
}

// noSuchOption is the usage error for an unknown option, suggesting the
// close ones (see suggest).
func noSuchOption(name string, tiers ...[]flagSpec) error {
	return errors.New("No such option: " + name + suggest(name, tiers...))
}

// dispatch finds the leaf command args name under cmd (reached by path),
// parses its flags and arguments and runs it.
func dispatch(io *term.IO, opts options, root, cmd *command, path string, args []string, now func() time.Time) int {
	if !cmd.isGroup() && len(args) > 0 {
		if sub := cmd.sub(args[0]); sub != nil {
			return dispatch(io, opts, root, sub, path+" "+args[0], args[1:], now)
		}
	}
	if cmd.isGroup() {
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
			n, err := takeGlobal(&opts, args)
			if err != nil {
				return usageError(io, path, err.Error())
			}
			if n == 0 {
				return usageError(io, path, noSuchOption(a, []flagSpec{helpFlag}, globalAnywhere()).Error())
			}
			return dispatch(io, opts, root, cmd, path, args[n:], now)
		}
		sub := cmd.sub(a)
		if sub == nil {
			return usageError(io, path, noSuchCommand(a, cmd.subNames()))
		}
		return dispatch(io, opts, root, sub, path+" "+a, args[1:], now)
	}
	inv := &invocation{io: io, opts: opts, now: now, root: root, cmd: cmd, path: path, flags: map[string][]string{}}
	specs := leafFlags(cmd)
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
		spec, name, val, hasVal := matchFlag(specs, a)
		if spec == nil {
			n, err := takeGlobal(&inv.opts, args[i:])
			if err != nil {
				return inv.usageError(err.Error())
			}
			if n == 0 {
				own := append(cmd.flags(), helpFlag)
				return inv.usageError(noSuchOption(name, own, append([]flagSpec{formatFlag}, globalAnywhere()...)).Error())
			}
			i += n - 1
			continue
		}
		if spec.Kind == flagBool {
			if hasVal {
				return inv.usageError(fmt.Sprintf("Option '%s' does not take a value.", spec.Long))
			}
			val = "true"
		} else if !hasVal {
			if i+1 >= len(args) {
				fmt.Fprintf(io.Err, "Error: Option '%s' requires an argument.\n", name)
				return shell.ExitUsage
			}
			i++
			val = args[i]
		}
		if spec.Kind == flagInt {
			if _, err := strconv.Atoi(strings.TrimSpace(val)); err != nil {
				return inv.usageError(fmt.Sprintf("Invalid value for '%s': '%s' is not a valid integer.", flagLabel(spec), val))
			}
			val = strings.TrimSpace(val)
		}
		inv.flags[spec.key()] = append(inv.flags[spec.key()], val)
	}
	if inv.has("help") {
		fmt.Fprint(io.Out, commandHelp(cmd, path))
		return shell.ExitOK
	}
	if inv.has("format") && !ownsFormat(cmd) {
		f := inv.str("format")
		if f != "table" && f != "json" {
			return inv.usageError(fmt.Sprintf("Invalid value for '--format' / '-f': '%s' is not one of 'table', 'json'.", f))
		}
		inv.opts.format, inv.opts.formatSet = f, true
	}
	if msg := bindArgs(cmd.Args, positional); msg != "" {
		return inv.usageError(msg)
	}
	inv.args = positional
	if cmd.API != nil {
		return runAPI(inv, cmd.API)
	}
	return cmd.Run(inv)
}

// bindArgs checks the positional arguments against specs and returns the
// usage error, if any.
func bindArgs(specs []argSpec, positional []string) string {
	n := 0
	for _, spec := range specs {
		if spec.Variadic {
			n = len(positional)
			break
		}
		if n >= len(positional) {
			if !spec.Optional {
				return fmt.Sprintf("Missing argument '%s'.", spec.Name)
			}
			break
		}
		if len(spec.Choices) > 0 && !slices.Contains(spec.Choices, positional[n]) {
			return fmt.Sprintf("Invalid value for '%s': '%s' is not one of '%s'.", spec.Name, positional[n], strings.Join(spec.Choices, "', '"))
		}
		n++
	}
	if n < len(positional) {
		return fmt.Sprintf("Got unexpected extra argument (%s)", strings.Join(positional[n:], " "))
	}
	return ""
}

func flagLabel(s *flagSpec) string {
	if s.Short != "" && s.Long != "--format" {
		return s.Long + "' / '" + s.Short
	}
	return s.Long
}

// suggest proposes the long options close to name the way Click does
// (difflib's get_close_matches: up to 3 with a similarity ratio of at least
// 0.6), as " Did you mean X?" or " (Possible options: X, Y)"; "" when none
// is close or name is not a long option. Each tier of candidates is tried
// in turn, so options of our own never crowd out the official ones.
func suggest(name string, tiers ...[]flagSpec) string {
	if !strings.HasPrefix(name, "--") {
		return ""
	}
	for _, specs := range tiers {
		type match struct {
			name  string
			ratio float64
		}
		var ms []match
		for _, s := range specs {
			if s.Long == "" {
				continue
			}
			if r := similarity(s.Long, name); r >= 0.6 {
				ms = append(ms, match{s.Long, r})
			}
		}
		if len(ms) == 0 {
			continue
		}
		// The best three by ratio (ties: the later name first, as
		// heapq.nlargest on (ratio, name) pairs), then listed sorted.
		sort.Slice(ms, func(i, j int) bool {
			if ms[i].ratio != ms[j].ratio {
				return ms[i].ratio > ms[j].ratio
			}
			return ms[i].name > ms[j].name
		})
		names := make([]string, 0, 3)
		for _, m := range ms[:min(3, len(ms))] {
			names = append(names, m.name)
		}
		if len(names) == 1 {
			return " Did you mean " + names[0] + "?"
		}
		sort.Strings(names)
		return " (Possible options: " + strings.Join(names, ", ") + ")"
	}
	return ""
}

// similarity is difflib's SequenceMatcher(None, a, b).ratio(): twice the
// characters in matching blocks over the total length.
func similarity(a, b string) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	return 2 * float64(matched(a, b)) / float64(len(a)+len(b))
}

// matched counts the characters of the longest common block of a and b
// (the earliest in a, then in b, among the longest), plus recursively those
// left and right of it.
func matched(a, b string) int {
	bi, bj, bk := 0, 0, 0
	for i := range len(a) {
		for j := range len(b) {
			k := 0
			for i+k < len(a) && j+k < len(b) && a[i+k] == b[j+k] {
				k++
			}
			if k > bk {
				bi, bj, bk = i, j, k
			}
		}
	}
	if bk == 0 {
		return 0
	}
	return bk + matched(a[:bi], b[:bj]) + matched(a[bi+bk:], b[bj+bk:])
}

func groupHelp(cmd *command, path string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s [OPTIONS] COMMAND [ARGS]...\n\n", path)
	if cmd.Help != "" {
		fmt.Fprintf(&b, "  %s\n\n", cmd.Help)
	}
	b.WriteString("Options:\n  -h, --help  Show this message and exit.\n\nCommands:\n")
	b.WriteString(commandList(cmd))
	return b.String()
}

// commandList lists cmd's subcommands with their summaries, sorted.
func commandList(cmd *command) string {
	var b strings.Builder
	width := 0
	for _, s := range cmd.Sub {
		width = max(width, len(s.Name))
	}
	for _, n := range cmd.subNames() {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, n, cmd.sub(n).Summary)
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
	b.WriteString(optionList(leafFlags(cmd)))
	if cmd.Sub != nil {
		b.WriteString("\nCommands:\n" + commandList(cmd))
	}
	return b.String()
}

// optionList lists options with their help, aligned; a help text's later
// lines line up under its first.
func optionList(specs []flagSpec) string {
	var b strings.Builder
	labels := make([]string, len(specs))
	width := 0
	for i, s := range specs {
		l := s.Long
		switch {
		case s.Long == "":
			l = s.Short
		case s.Short != "":
			l = s.Short + ", " + s.Long
		}
		if s.Kind != flagBool {
			l += " " + s.Metavar
		}
		labels[i] = l
		width = max(width, len(l))
	}
	indent := "\n" + strings.Repeat(" ", width+4)
	for i, s := range specs {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, labels[i], strings.ReplaceAll(s.Help, "\n", indent))
	}
	return b.String()
}

// noSuchCommand words an unknown command, with the nearest one when close
// (lst → list).
func noSuchCommand(name string, commands []string) string {
	msg := fmt.Sprintf("No such command '%s'.", name)
	if near := nearest.Nearest(name, commands); near != "" {
		msg += fmt.Sprintf(" Did you mean '%s'?", near)
	}
	return msg
}
