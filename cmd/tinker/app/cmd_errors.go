package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/progress"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/shell"
)

// This file holds what every API subcommand shares: the backend, the
// "preflight" (client creation plus the client/config handshake, at the
// point where the official CLI does it, so the same error is seen first),
// Ctrl-C handling and the official CLI's error report.

// apiRun is one running API subcommand.
type apiRun struct {
	*invocation
	ctx     context.Context
	backend builtins.Backend
	// quitNote, when set, is what a second Ctrl-C prints as it quits.
	quitNote atomic.Pointer[string]
}

// unexpected reports err the way the official CLI's catch-all does.
func unexpected(err error) error {
	return &tinkerapi.UserError{Msg: "Unexpected error occurred: " + err.Error()}
}

// errAborted ends a command like Click's Abort: "\nAborted!" and exit 1.
var errAborted = errors.New("aborted")

// localHint tells a user without a credential how to choose a backend.
const localHint = "Or run `tinker --local ...` to use the local Tinker server (no account needed)."

// runAPI runs body with a context cancelled by Ctrl-C and prints its error
// like the official CLI. The backend starts lazily, at preflight.
func runAPI(c *invocation, body func(r *apiRun) error) int {
	r := &apiRun{invocation: c}
	ctx, stop := interruptible(c, &r.quitNote)
	defer stop()
	r.ctx = ctx
	if err := c.opts.applyProfile(); err != nil {
		fmt.Fprintf(c.io.Err, "Error: %v\n", err)
		return shell.ExitUsage
	}
	backend, cleanup, err := chooseBackend(c.io, c.opts, c.now)
	if err != nil { // only flag problems (--model) fail here
		fmt.Fprintf(c.io.Err, "Error: %v\n", err)
		return shell.ExitUsage
	}
	defer cleanup()
	r.backend = backend
	err = body(r)
	if err == nil {
		return shell.ExitOK
	}
	if ctx.Err() != nil || errors.Is(err, errAborted) || errors.Is(err, context.Canceled) {
		fmt.Fprint(c.io.Err, "\nAborted!\n")
		return shell.ExitError
	}
	msg, details := cliMessage(err)
	msg, details = render.PrintableLines(msg), render.PrintableLines(details)
	if msg != "" {
		fmt.Fprintf(c.io.Err, "Error: %s\n", msg)
	}
	if details != "" {
		fmt.Fprintln(c.io.Err, details)
	}
	return shell.ExitError
}

// interruptible is a context cancelled at the first Ctrl-C or SIGTERM (so
// a cancelled download removes its partial directory); the second exits
// at once with 130, whatever the command still waits for (a read, a save,
// the local server's shutdown), after printing *note if set.
func interruptible(c *invocation, note *atomic.Pointer[string]) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for n := 0; ; n++ {
			select {
			case <-done:
				return
			case <-sigs:
			}
			if cancel(); n == 0 {
				continue
			}
			msg := "interrupted again: quitting at once"
			if p := note.Load(); p != nil {
				msg = *p
			}
			fmt.Fprintln(c.io.Err, "\n"+msg)
			os.Exit(shell.ExitInterrupted)
		}
	}()
	return ctx, func() { signal.Stop(sigs); close(done); cancel() }
}

// cliMessage maps an error to the official CLI's message and details.
func cliMessage(err error) (msg, details string) {
	if errors.Is(err, ops.ErrNoBackend) {
		// The official wording (docs/compat.md, "Startup and credentials"), plus how to choose a backend.
		m, d := tinkerapi.CLIError(&tinkerapi.ConfigError{Msg: "The api_key client option must be set either by passing api_key to the client or by setting the TINKER_API_KEY environment variable"})
		return m, d + "\n" + localHint
	}
	return tinkerapi.CLIError(err)
}

// preflight creates the client and does the client/config handshake.
func (r *apiRun) preflight() (*tinkerapi.Client, error) {
	c, err := r.backend.Client()
	if err != nil {
		return nil, err
	}
	if _, err := c.ServerConfig(r.ctx); err != nil {
		// The official client makes this request while it is being
		// created, so a failure to reach the server is worded as one of
		// creating the client: "Failed to connect to Tinker API: Connection error."
		var te *tinkerapi.TransportError
		if errors.As(err, &te) {
			kind := tinkerapi.ErrConnection
			if te.Timeout {
				kind = tinkerapi.ErrTimeout
			}
			return nil, &tinkerapi.ConfigError{Msg: kind.Error()}
		}
		return nil, err
	}
	return c, nil
}

func (c *invocation) jsonMode() bool { return c.opts.format == "json" }

func (c *invocation) display() *shell.Display {
	return &shell.Display{IO: c.io, JSON: c.jsonMode(), Now: c.now}
}

// writeTable draws t on stdout: fitted to a terminal, whole otherwise.
func (c *invocation) writeTable(t *render.Table) error {
	return c.display().WriteTable(c.io.Out, t)
}

// writeJSON prints v as the official CLI's pretty JSON.
func (c *invocation) writeJSON(v any) error {
	return render.WriteJSON(c.io.Out, v, render.JSONOptions{Indent: true})
}

// bar is a click-style progress bar on stdout, shown in table mode only
// (off a terminal it prints its label once: a kept quirk).
func (c *invocation) bar(label string, length int64) *clickProgress {
	if c.jsonMode() {
		return nil
	}
	return &clickProgress{progress.NewClick(c.io.Out, c.io.OutTTY, label, length)}
}

// clickProgress adapts a click bar to ops.Progress and
// download.Progress; a nil one does nothing.
type clickProgress struct{ b *progress.ClickBar }

func (p *clickProgress) Add(n int64) {
	if p != nil {
		p.b.Add(n)
	}
}
func (p *clickProgress) Set(n int64) {
	if p != nil {
		p.b.Set(n)
	}
}
func (p *clickProgress) SetTotal(n int64) {
	if p != nil {
		p.b.SetTotal(n)
	}
}
func (p *clickProgress) Finish() {
	if p != nil {
		p.b.Close()
	}
}
