package app

import (
	"fmt"

	"github.com/tinkershell/tinker/shell"
)

// commands are the subcommands; command words win over script names unless
// the argument ends in .star or contains a slash.
var commands = map[string]*command{
	"version": {
		Name:    "version",
		Summary: "Show the version.",
		Run: func(c *invocation) int {
			fmt.Fprintf(c.io.Out, "tinker %s\n", Version)
			return shell.ExitOK
		},
	},
}

const rootHelp = `Usage: tinker [OPTIONS] [COMMAND [ARGS]... | SCRIPT.star [ARGS]...]

  A fast, scriptable shell for the Tinker fine-tuning service.

  With no command: an interactive Starlark prompt on a terminal, or the
  program read from stdin. SCRIPT.star runs a script (argv holds its path
  and arguments).

Options:
  -f, --format [table|json]  Output format for displayed values.
  -c TEXT                    Evaluate TEXT: an expression is displayed as the
                             prompt would; anything else runs as a program.
  --local                    Use the local Tinker server (data under
                             $XDG_DATA_HOME/tinker), started in-process.
  --model NAME=DIR           With --local: sample base model NAME from a
                             Hugging Face model directory (repeatable).
  --version                  Show the version and exit.
  -h, --help                 Show this message and exit.

Commands:
  billing     Billing and usage.
  checkpoint  Manage checkpoints.
  completion  Print a shell completion script (bash, zsh, fish).
  run         Manage training runs.
  sample      Sample from a base model or a checkpoint.
  serve       Run the local Tinker server.
  session     Manage sessions.
  tokenize    Turn text into a base model's token ids.
  version     Show the version.

Environment:
  TINKER_API_KEY     credential for the Tinker service (never printed)
  TINKER_BASE_URL    service address (default: the hosted service)
  TINKER_NOW         pin the clock (RFC 3339) for reproducible output
  NO_COLOR           disable colour
`
