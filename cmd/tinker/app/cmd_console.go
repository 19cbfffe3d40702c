package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tinkershell/tinker/cmd/tinker/localapi"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/shell"
)

// tinker console: the web console (lib/console) on its own, against the
// chosen backend; tinker serve mounts the same console beside its API.
// Both run in tinker-local (cmd/tinker/localserver), as lib/console reads
// the local server's store.

var consoleCmd = &command{
	Name:    "console",
	Summary: "Serve the web console: runs, checkpoints, training curves.",
	Help: "Serve the web console on a loopback address and open it in a browser on\n" +
		"this machine: sign in with your API key, which stays in this process.\n" +
		"It talks to the service ($TINKER_BASE_URL or the profile's), or with --local\n" +
		"to a local server on the same address (its API too, for training scripts:\n" +
		"set TINKER_BASE_URL to it), whose training curves it draws live.\n" +
		"tinker serve serves the console too.",
	Flags: []flagSpec{
		{Long: "--addr", Kind: flagString, Metavar: "HOST:PORT", Help: "Loopback address to listen on (default 127.0.0.1:8001)."},
		{Long: "--log-dir", Kind: flagMulti, Metavar: "DIR", Help: "Show the metrics.jsonl of log directory DIR (or of each one under it), live (repeatable)."},
	},
	Run: runConsole,
}

func runConsole(c *invocation) int {
	local, err := localServer()
	if err != nil {
		fmt.Fprintf(c.io.Err, "Error: %v\n", err)
		return shell.ExitError
	}
	o := localapi.ConsoleOptions{Addr: c.str("addr"), LogDirs: c.multi("log-dir"), Local: c.opts.local, DataDir: DataDir(), Now: c.now, Err: c.io.Err}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:8001"
	}
	if o.Local {
		if o.Models, err = modelDirs(local, c.opts.models); err != nil {
			fmt.Fprintf(c.io.Err, "Error: %v\n", err)
			return shell.ExitError
		}
	} else if o.BaseURL = tinkerapi.ConfigFromEnv(c.opts.env).BaseURL; o.BaseURL == "" {
		o.BaseURL = tinkerapi.DefaultBaseURL
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := local.Console(ctx, o); err != nil {
		var usage *localapi.UsageError
		if errors.As(err, &usage) {
			return c.usageError(usage.Msg)
		}
		fmt.Fprintf(c.io.Err, "Error: %v\n", err)
		return shell.ExitError
	}
	return shell.ExitOK
}
