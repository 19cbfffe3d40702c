// Package builtins is the Starlark surface of tinker: the modules
// checkpoint, run, session and billing, the functions sample,
// save_checkpoint, download, table, help and friends, and the value types
// they return. Builtins never print; they return values and the shell
// decides how those look.
package builtins

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/progress"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/starlark"
)

// Env is the per-interpreter state builtins need. The shell creates one and
// attaches it to every thread with Attach.
type Env struct {
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

	sess sessionState
}

// Backend hands out API clients. It is an interface so the shell can create
// the client (and a local server) only when a builtin first needs it.
type Backend interface {
	// Name describes the backend for the banner, e.g. "local (~/.local/share/tinker)".
	Name() string
	// Client returns the API client or an error explaining how to choose a backend.
	Client() (*tinkerapi.Client, error)
}

const (
	envKey = "tinker.env"
	ctxKey = "tinker.ctx"
)

// Attach makes env visible to builtins running on thread.
func Attach(thread *starlark.Thread, env *Env) { thread.SetLocal(envKey, env) }

// SetContext gives the evaluation about to run on thread its context,
// cancelled when the user interrupts it (Ctrl-C); nil clears it.
func SetContext(thread *starlark.Thread, ctx context.Context) { thread.SetLocal(ctxKey, ctx) }

// ContextOf is the context of the evaluation running on thread.
func ContextOf(thread *starlark.Thread) context.Context {
	if ctx, ok := thread.Local(ctxKey).(context.Context); ok && ctx != nil {
		return ctx
	}
	return context.Background()
}

// envOf returns the Env attached to thread, or a usable default.
func envOf(thread *starlark.Thread) *Env {
	if e, ok := thread.Local(envKey).(*Env); ok && e != nil {
		return e
	}
	return &Env{Now: time.Now, Notices: io.Discard}
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
		return nil, ops.ErrNoBackend
	}
	return e.Backend.Client()
}

// session state lives beside Env so that builtins share one Tinker session
// (and its heartbeat) per interpreter; see Session and Close.
type sessionState struct {
	mu      sync.Mutex
	session *tinkerapi.Session
	// opened: a session was ever created, so Close has work. Close is
	// called at every exit; without a session it returns from its inlined
	// check, and `tinker -c '1+1'` does not fault in the page of this
	// package's code that holds the rest (TestCloseInlines).
	opened   atomic.Bool
	samplers *ops.Samplers // sampling sessions belong to a session
	status   *progress.Status
	hushed   bool // a loop draws its own step line (HushStatus)
}

func (e *Env) state() *sessionState { return &e.sess }

// samplers are the current session's sampling sessions.
func (e *Env) samplers() *ops.Samplers {
	st := e.state()
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.samplers
}

// Session returns the interpreter's Tinker session, creating it (and its
// background heartbeat) on first use; ctx bounds the creation only.
func (e *Env) Session(ctx context.Context) (*tinkerapi.Session, error) {
	st := e.state()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.session != nil && st.session.Err() == nil {
		return st.session, nil
	}
	c, err := e.Client()
	if err != nil {
		return nil, err
	}
	opts := tinkerapi.SessionOptionsFromEnv(nil)
	opts.OnState = e.showState
	opts.OnWarning = func(err error) {
		if e.Notices != nil {
			fmt.Fprintf(e.Notices, "warning: %v\n", err)
		}
	}
	s, err := c.CreateSession(ctx, opts)
	if err != nil {
		return nil, err
	}
	st.session = s
	st.opened.Store(true)
	st.samplers = &ops.Samplers{}
	return s, nil
}

// showState draws the live status line of the awaited future; the line
// adds its own elapsed time, so the state's label goes without one.
func (e *Env) showState(s tinkerapi.State) {
	if !e.NoticesTTY {
		return
	}
	st := e.state()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.hushed {
		return
	}
	if st.status == nil {
		st.status = progress.NewStatus(e.Notices, true, e.Width, s.Label())
	} else {
		st.status.Set(s.Label())
	}
}

// HushStatus stops the request status line (showState) until the returned
// function is called: a training loop draws its own step line, and two
// lines taking turns on one terminal row flicker and leave each other's
// ends behind.
func (e *Env) HushStatus() (restore func()) {
	e.clearStatus()
	st := e.state()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.hushed = true
	return func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		st.hushed = false
	}
}

// clearStatus removes the status line once a call is over.
func (e *Env) clearStatus() {
	st := e.state()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.status != nil {
		st.status.Clear()
		st.status = nil
	}
}

// Close ends the session (its heartbeat stops); the shell calls it on exit.
func (e *Env) Close() {
	if e.sess.opened.Load() {
		e.closeSession()
	}
}

func (e *Env) closeSession() {
	st := e.state()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.session != nil {
		st.session.Close()
		st.session = nil
	}
}
