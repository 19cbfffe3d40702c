package app

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/cmd/tinker/localapi"
	"github.com/tinkershell/tinker/lib/config"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/term"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// noBackend is used when neither a credential nor --local was given: the
// prompt still starts, and API builtins explain how to choose.
type noBackend struct{}

func (noBackend) Name() string { return "none (set TINKER_API_KEY, or start with --local)" }
func (noBackend) Client() (*tinkerapi.Client, error) {
	return nil, ops.ErrNoBackend
}

// remoteBackend talks to a Tinker service over HTTP; the client is created
// on first use so that start-up does no work for programs that never call it.
type remoteBackend struct {
	name string
	cfg  tinkerapi.Config
	// start, when set, runs before the client is made (the local server).
	start func() (baseURL string, err error)

	once   sync.Once
	client *tinkerapi.Client
	err    error
}

func (b *remoteBackend) Name() string { return b.name }

func (b *remoteBackend) Client() (*tinkerapi.Client, error) {
	b.once.Do(func() {
		if b.start != nil {
			url, err := b.start()
			if err != nil {
				b.err = err
				return
			}
			b.cfg.BaseURL = url
		}
		b.client, b.err = tinkerapi.New(b.cfg)
	})
	return b.client, b.err
}

// DataDir is where tinker --local keeps its server's data:
// $XDG_DATA_HOME/tinker (default ~/.local/share/tinker).
func DataDir() string {
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return filepath.Join(os.TempDir(), "tinker-data")
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "tinker")
}

// chooseBackend picks the backend from flags and environment. With --local a
// server runs in-process on a loopback port, started on first use (in
// tinker-local: tinker hands its process over to it first); the returned
// cleanup stops it.
func chooseBackend(io *term.IO, opts options, now func() time.Time) (builtins.Backend, func(), error) {
	if !opts.local && len(opts.models) == 0 && opts.env(config.EnvAPIKey) == "" && opts.env(config.EnvCredentialCmd) == "" {
		// No backend, the common case of `tinker -c` and scripts: decided
		// before anything of lib/tinkerapi runs, whose code would be one
		// more page to fault in at the start (docs/architecture.md, "Cold
		// start: what `tinker -c '1+1'` pays, and its floor"). The same
		// answer as the check on cfg below.
		return noBackend{}, func() {}, nil
	}
	cfg := tinkerapi.ConfigFromEnv(opts.env)
	cfg.UserAgent = tinkerapi.UserAgent(Version)
	if os.Getenv("TINKER_LOG") != "" {
		cfg.Logf = func(format string, args ...any) { fmt.Fprintf(io.Err, format+"\n", args...) }
	}
	if opts.local {
		// tinker hands over to tinker-local here, before anything has run.
		local, err := localServer()
		if err != nil {
			return nil, nil, err
		}
		dirs, err := modelDirs(local, opts.models)
		if err != nil {
			return nil, nil, err
		}
		dir := DataDir()
		// Always the local user: a key in the environment belongs to the
		// hosted service, and would show another user's (empty) store.
		cfg.APIKey = localapi.LocalUserKey
		cfg.CredentialCmd = ""
		b := &remoteBackend{name: "local, user " + localapi.LocalUserKey + ", data in " + dir, cfg: cfg}
		start, stop := local.Backend(dir, dirs, now)
		b.start = start
		return b, stop, nil
	}
	if len(opts.models) > 0 {
		return nil, nil, fmt.Errorf("--model applies to the local server: add --local (or pass it to tinker serve)")
	}
	if cfg.APIKey == "" && cfg.CredentialCmd == "" {
		return noBackend{}, func() {}, nil
	}
	base := cfg.BaseURL
	if base == "" {
		base = tinkerapi.DefaultBaseURL
	}
	return &remoteBackend{name: base, cfg: cfg}, func() {}, nil
}
