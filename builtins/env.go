// Package builtins is the Starlark surface of tinker: the modules
// checkpoint, run, session and billing, the functions sample,
// save_checkpoint, download, table, help and friends, and the value types
// they return. Builtins never print; they return values and the shell
// decides how those look.
package builtins

import (
	"context"
	"io"
	"time"

	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/starlark"
)

// Env is the per-interpreter state builtins need. The shell creates one and
// attaches it to every thread with Attach.
type Env struct {
	// Ctx is cancelled when the user interrupts the running call (Ctrl-C).
	// The shell replaces it before each evaluation.
	Ctx context.Context
	// Now is the clock used for relative times and date filters.
	Now func() time.Time
	// Interactive is set when a person at a terminal can answer questions.
	Interactive bool
	// Confirm asks a yes/no question; only used when Interactive.
	Confirm func(question string) (bool, error)
	// Notices receives progress bars and notices; NoticesTTY says whether
	// it is a terminal (bars are drawn only then).
	Notices    io.Writer
	NoticesTTY bool
	// Width of the terminal, for progress bars.
	Width int
	// Version is the program version.
	Version string
	// Backend connects to the service lazily; nil means none was chosen.
	Backend Backend
}

// Backend hands out API clients. It is an interface so the shell can create
// the client (and a local server) only when a builtin first needs it.
type Backend interface {
	// Name describes the backend for the banner, e.g. "local (~/.local/share/tinker)".
	Name() string
	// Client returns the API client or an error explaining how to choose a backend.
	Client() (*tinkerapi.Client, error)
}

const envKey = "tinker.env"

// Attach makes env visible to builtins running on thread.
func Attach(thread *starlark.Thread, env *Env) { thread.SetLocal(envKey, env) }

// EnvOf returns the Env attached to thread, or a usable default.
func EnvOf(thread *starlark.Thread) *Env {
	if e, ok := thread.Local(envKey).(*Env); ok && e != nil {
		return e
	}
	return &Env{Ctx: context.Background(), Now: time.Now, Notices: io.Discard}
}

// Context returns the cancellation context of the running evaluation.
func (e *Env) Context() context.Context {
	if e.Ctx == nil {
		return context.Background()
	}
	return e.Ctx
}

// Clock returns the current time per the configured clock.
func (e *Env) Clock() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// Client returns the API client of the chosen backend.
func (e *Env) Client() (*tinkerapi.Client, error) {
	if e.Backend == nil {
		return nil, errNoBackend
	}
	return e.Backend.Client()
}
