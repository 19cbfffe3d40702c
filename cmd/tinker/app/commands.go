package app

import (
	"fmt"

	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/shell"
)

// root is the command table: every subcommand, and through Sub theirs. The
// root help's command list, the completion scripts and the parser all read
// it. Command words win over script names unless the argument ends in .star
// or contains a slash.
var root = &command{
	Name:  "tinker",
	Flags: rootFlags,
	Sub: []*command{
		billingCmd,
		checkpointCmd,
		completionCmd,
		configCmd,
		consoleCmd,
		doctorCmd,
		evalCmd,
		modelsCmd,
		runCmd,
		sampleCmd,
		serveCmd,
		sessionCmd,
		tokenizeCmd,
		trainCmd,
		versionCmd,
	},
}

// rootFlags are the global options. All but -c, --version and -h may also
// follow the command words (globalAnywhere).
var rootFlags = []flagSpec{
	{Long: "--format", Short: "-f", Kind: flagString, Metavar: "[table|json]", Help: "Output format for displayed values."},
	{Short: "-c", Kind: flagString, Metavar: "TEXT", Help: "Run TEXT as a program; the value of a final\nexpression is displayed as the prompt would."},
	{Long: "--local", Kind: flagBool, Help: "Use the local Tinker server, started in-process,\nas its local user tml-local-user (whatever\nTINKER_API_KEY says); data under $XDG_DATA_HOME/tinker\n(default ~/.local/share/tinker)."},
	{Long: "--model", Kind: flagMulti, Metavar: "NAME=DIR", Help: "With --local: sample base model NAME from a\nHugging Face model directory (repeatable)."},
	{Long: "--profile", Kind: flagString, Metavar: "NAME", Help: "Use profile NAME from the config file (tinker\nconfig path); also TINKER_PROFILE."},
	{Long: "--version", Kind: flagBool, Help: "Show the version and exit."},
	helpFlag,
}

var versionCmd = &command{
	Name:    "version",
	Summary: "Show the version.",
	Run:     runVersion,
}

// runVersion prints the tool's version; with -f json also the API
// version it speaks (the SDK version it announces to the service).
func runVersion(c *invocation) int {
	if c.jsonMode() {
		return exitOf(c.writeJSON(render.Object{{Key: "version", Value: Version}, {Key: "api_version", Value: tinkerapi.SDKVersion}}))
	}
	fmt.Fprintf(c.io.Out, "tinker %s\n", Version)
	return shell.ExitOK
}

// rootHelp is tinker -h.
func rootHelp() string {
	return `Usage: tinker [OPTIONS] [COMMAND [ARGS]... | SCRIPT.star [ARGS]...]

  A fast, scriptable shell for the Tinker fine-tuning service.

  With no command: an interactive Starlark prompt on a terminal, or the
  program read from stdin. SCRIPT.star runs a script (argv holds its path
  and arguments).

Options:
` + optionList(root.Flags) + `
Commands:
` + commandList(root) + `
Environment:
  TINKER_API_KEY     credential for the Tinker service (never printed)
  TINKER_BASE_URL    service address (default: the hosted service)
  TINKER_PROFILE     profile from $XDG_CONFIG_HOME/tinker/config.toml
  TINKER_NOW         pin the clock (RFC 3339) for reproducible output
  NO_COLOR           disable colour
`
}
