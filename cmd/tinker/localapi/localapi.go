// Package localapi is the contract between tinker and the half of it that
// runs a Tinker server in-process: lib/server's store (SQLite), the engine
// and the web console. That half lives in cmd/tinker/localserver and is
// linked only into tinker-local (and tests); tinker itself imports this
// package alone, which links nothing of the server, so that a shell
// without a local server starts as fast as it can (docs/architecture.md,
// "Splitting the local server out of `tinker`"). tinker hands over to
// tinker-local, replacing its own process, when a command needs the
// server.
package localapi

import (
	"context"
	"io"
	"time"
)

// LocalUserKey is the API key of the local user, the one tinker --local
// acts as; lib/server defines its own copy, which a test keeps equal.
const LocalUserKey = "tml-local-user"

// KeysEnv names the environment variable tinker serve reads API keys
// from, comma-separated (lib/server.KeysEnv; a test keeps them equal).
const KeysEnv = "TINKER_SERVE_API_KEYS"

// Server is the local server's half of tinker.
type Server interface {
	// RegisterModelDir makes base model name load from a Hugging Face
	// model directory (--model NAME=DIR).
	RegisterModelDir(name, dir string) error
	// Backend opens the store in dataDir for tinker --local; start serves
	// it on a loopback port (on first use) and returns its base URL, stop
	// closes it.
	Backend(dataDir string, models map[string]string, now func() time.Time) (start func() (string, error), stop func())
	// BF16ComputeAvailable tells whether --bf16-compute can run here.
	BF16ComputeAvailable() bool
	// Serve runs tinker serve until ctx ends.
	Serve(ctx context.Context, o ServeOptions) error
	// Console runs tinker console until ctx ends.
	Console(ctx context.Context, o ConsoleOptions) error
	// Import loads a manifest's runs and checkpoints into dataDir.
	Import(ctx context.Context, dataDir string, manifest io.Reader, now time.Time) (runs, checkpoints int, err error)
	// ImportAdapter turns the PEFT adapter in dir into a run of the local user.
	ImportAdapter(ctx context.Context, dataDir, dir, baseModel, name string, now time.Time) (Adapter, error)
}

// ServeOptions are tinker serve's flags, parsed.
type ServeOptions struct {
	Addr, DataDir string
	// APIKeys, APIKeyFile and KeysFromEnv are the three sources of keys
	// (--api-key, --api-key-file, $TINKER_SERVE_API_KEYS).
	APIKeys     []string
	APIKeyFile  string
	KeysFromEnv string
	Models      map[string]string
	TrainMemory int64
	BF16Compute bool
	JWT         bool
	// ShutdownGrace and AbandonGrace are lib/server's options of the
	// same names (0 keeps its default, negative halts at once).
	ShutdownGrace, AbandonGrace time.Duration
	ConsoleLogDirs              []string
	Logf                        func(format string, args ...any)
	Now                         func() time.Time
	// Err gets the lines that announce the server.
	Err io.Writer
}

// ConsoleOptions are tinker console's flags, parsed.
type ConsoleOptions struct {
	Addr    string
	LogDirs []string
	// Local serves a local server (DataDir, Models) beside the console;
	// otherwise the console talks to BaseURL.
	Local   bool
	BaseURL string
	DataDir string
	Models  map[string]string
	Now     func() time.Time
	Err     io.Writer
}

// Adapter is what ImportAdapter made.
type Adapter struct {
	RunID       string
	Path        string // tinker:// path of the weights checkpoint
	SamplerPath string // tinker:// path of the sampler checkpoint
	Rank        int
	Targets     []string // LoRA target groups of the run: attn, mlp, unembed
}

// UsageError is an error in the command line (exit status 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }
