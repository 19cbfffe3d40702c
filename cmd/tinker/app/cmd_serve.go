package app

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tinkershell/tinker/cmd/tinker/localapi"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/userfile"
	"github.com/tinkershell/tinker/shell"
)

var serveCmd = &command{
	Name:    "serve",
	Summary: "Run the local Tinker server.",
	Help: "Serve the Tinker HTTP API from DIR (SQLite database and checkpoint files).\n" +
		"Without keys (--api-key, --api-key-file or $TINKER_SERVE_API_KEYS) any key\n" +
		"starting with tml- is accepted, each one a user;\n" +
		"a non-loopback --addr requires explicit keys. A key given with --api-key\n" +
		"is visible to every user of the machine in the process list (ps): give\n" +
		"keys with --api-key-file or $" + localapi.KeysEnv + " instead.\n" +
		"Limits: idle models written to disk to make room in training memory\n" +
		"take at most 1 GiB per user (then that user's further models wait);\n" +
		"a request body must arrive within 2 minutes; one client may hold 256\n" +
		"connections, all clients half the open-file limit (at most 1024).",
	Sub: []*command{serveImportCmd, serveImportAdapterCmd},
	Flags: []flagSpec{
		{Long: "--data", Kind: flagPath, Metavar: "DIR", Help: "Data directory (default $XDG_DATA_HOME/tinker)."},
		{Long: "--addr", Kind: flagString, Metavar: "HOST:PORT", Help: "Listen address (default 127.0.0.1:8000)."},
		{Long: "--api-key", Kind: flagMulti, Metavar: "KEY", Help: "Accept only this key (repeatable; visible in the process list)."},
		{Long: "--api-key-file", Kind: flagPath, Metavar: "FILE", Help: "Accept the keys in FILE, one a line (also $" + localapi.KeysEnv + ", comma-separated)."},
		{Long: "--model", Kind: flagMulti, Metavar: "NAME=DIR", Help: "Serve base model NAME from a Hugging Face model directory (repeatable); NAME may be new."},
		{Long: "--train-memory", Kind: flagString, Metavar: "SIZE", Help: "Training memory: running passes, queued requests and trainers each stay within it, e.g. 4G or 512M (default a quarter of RAM)."},
		{Long: "--abandon-grace", Kind: flagString, Metavar: "DURATION", Help: "Cancel a running sample outside any session when its client has not polled for it this long (default 60s). A session's work stops when its heartbeats stop or its client cancels it, never for a gap between polls."},
		{Long: "--shutdown-grace", Kind: flagString, Metavar: "DURATION", Help: "On SIGTERM or Ctrl-C, let queued training operations run this long before halting the rest, e.g. 10s or 2m; 0 halts at once (default 30s)."},
		{Long: "--console-log-dir", Kind: flagMulti, Metavar: "DIR", Help: "Show the metrics.jsonl of log directory DIR (or of each one under it) in the web console (repeatable)."},
		{Long: "--bf16-compute", Kind: flagBool, Help: "Run bf16 checkpoints' products in bf16 (activations rounded to bf16, float32 sums) on AMX or\nAVX512-BF16, as PyTorch's bf16 path does: faster prefill, logprobs at bf16 precision."},
		{Long: "--jwt", Kind: flagBool, Help: "Offer the JWT exchange (auth/token) as the service does, so clients send tokens and whoami works."},
		{Long: "--verbose", Short: "-v", Kind: flagBool, Help: "Log each request to stderr: method, path, status, duration and a hash of the\nuser's key (never keys or bodies)."},
	},
	Run: runServe,
}

var serveImportCmd = &command{
	Name:    "import",
	Summary: "Load runs and checkpoints from a JSON manifest.",
	Help: "Load the training runs and checkpoints a JSON manifest FILE describes into\n" +
		"the data directory, writing real checkpoint files. The manifest is an object:\n" +
		"\"runs\" is a list of runs, each with \"base_model\" (a model the local server\n" +
		"serves) and optionally \"id\", \"lora_rank\", \"user_metadata\", \"created\" and\n" +
		"\"checkpoints\", a list of {\"kind\": \"weights\" or \"sampler_weights\", \"name\",\n" +
		"\"time\", \"public\", \"expires_at\"}. \"owner_key\" (at the top or on a run) gives\n" +
		"runs to the user of that API key; without it they belong to the local user\n" +
		"(" + localapi.LocalUserKey + "), the one tinker --local acts as.",
	Args: []argSpec{{Name: "FILE"}},
	Flags: []flagSpec{
		{Long: "--data", Kind: flagPath, Metavar: "DIR", Help: "Data directory (default $XDG_DATA_HOME/tinker)."},
	},
	Run: runImport,
}

func runServe(c *invocation) int {
	local, err := localServer()
	if err != nil {
		fmt.Fprintf(c.io.Err, "Error: %v\n", err)
		return shell.ExitError
	}
	dir := dataFlag(c)
	addr := c.str("addr")
	if addr == "" {
		addr = "127.0.0.1:8000"
	}
	dirs, err := modelDirs(local, c.multi("model"))
	if err != nil {
		return c.usageError(err.Error())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var trainMem int64
	if v := c.str("train-memory"); v != "" {
		if trainMem, err = parseSize(v); err != nil {
			return c.usageError(fmt.Sprintf("Invalid value for '--train-memory': %v", err))
		}
	}
	if c.has("bf16-compute") && !local.BF16ComputeAvailable() {
		return c.usageError("--bf16-compute needs a CPU with AVX512-BF16 or AMX; this one has neither (run without it)")
	}
	grace, err := shutdownGrace(c.str("shutdown-grace"))
	if err != nil {
		return c.usageError(err.Error())
	}
	abandon, err := abandonGrace(c.str("abandon-grace"))
	if err != nil {
		return c.usageError(err.Error())
	}
	err = local.Serve(ctx, localapi.ServeOptions{Addr: addr, DataDir: dir,
		APIKeys: c.multi("api-key"), APIKeyFile: c.str("api-key-file"), KeysFromEnv: os.Getenv(localapi.KeysEnv),
		Models: dirs, TrainMemory: trainMem, BF16Compute: c.has("bf16-compute"), JWT: c.has("jwt"),
		ShutdownGrace: grace, AbandonGrace: abandon, ConsoleLogDirs: c.multi("console-log-dir"),
		Logf: serveLog(c), Now: c.now, Err: c.io.Err})
	if err != nil {
		fmt.Fprintf(c.io.Err, "Error: %v\n", err)
		return shell.ExitError
	}
	return shell.ExitOK
}

// serveLog is the server's log with -v: one line per request and the
// background events, each after a UTC timestamp. Without -v the server
// logs nothing.
func serveLog(c *invocation) func(format string, args ...any) {
	if !c.has("verbose") {
		return nil
	}
	return func(format string, args ...any) {
		fmt.Fprintf(c.io.Err, "%s "+format+"\n", append([]any{c.now().UTC().Format(time.RFC3339)}, args...)...)
	}
}

// dataFlag is --data, or the default data directory.
func dataFlag(c *invocation) string {
	if dir := c.str("data"); dir != "" {
		return dir
	}
	return DataDir()
}

// maxManifest bounds a manifest read into memory: 10,000 listed
// checkpoints take about 2 MB.
const maxManifest = 256 << 20

func runImport(c *invocation) int {
	local, err := localServer()
	if err != nil {
		fmt.Fprintf(c.io.Err, "Error: %v\n", err)
		return shell.ExitError
	}
	dir, file := dataFlag(c), c.args[0]
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A FIFO (a shell's <(...)) or a device is read with a bound, and a
	// silent writer never holds the command past Ctrl-C.
	data, err := userfile.ReadAny(ctx, file, maxManifest)
	if err != nil {
		fmt.Fprintf(c.io.Err, "Error: cannot read manifest: %v\n", err)
		return shell.ExitError
	}
	start := time.Now()
	runs, checkpoints, err := local.Import(ctx, dir, bytes.NewReader(data), c.now())
	if err != nil {
		fmt.Fprintf(c.io.Err, "Error: import %s: %v\n", file, err)
		return shell.ExitError
	}
	fmt.Fprintf(c.io.Err, "Imported %s and %s into %s in %.2fs\n", ops.Count(runs, "run", "runs"), ops.Count(checkpoints, "checkpoint", "checkpoints"), dir, time.Since(start).Seconds())
	return shell.ExitOK
}

// parseSize reads a byte count with an optional K, M, G or T suffix
// (powers of 1024), e.g. 512M.
func parseSize(v string) (int64, error) {
	mult := int64(1)
	if i := strings.IndexAny(strings.ToUpper(v), "KMGT"); i >= 0 && i == len(v)-1 {
		mult = int64(1) << (10 * (1 + strings.IndexByte("KMGT", strings.ToUpper(v)[i])))
		v = v[:i]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a size such as 4G or 512M", v)
	}
	return n * mult, nil
}

// modelDirs parses --model NAME=DIR values and registers them with the
// local server.
func modelDirs(local localapi.Server, values []string) (map[string]string, error) {
	dirs := map[string]string{}
	for _, m := range values {
		name, path, ok := strings.Cut(m, "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("Invalid value for '--model': '%s' is not NAME=DIR.", m)
		}
		if st, err := os.Stat(path); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("Invalid value for '--model': %s is not a directory.", path)
		}
		dirs[name] = path
		if err := local.RegisterModelDir(name, path); err != nil {
			return nil, fmt.Errorf("Invalid value for '--model': %v", err)
		}
	}
	return dirs, nil
}

// shutdownGrace reads --shutdown-grace as server.Options.ShutdownGrace:
// empty keeps the server's default, 0 (halt at once) is negative there.
func shutdownGrace(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("Invalid value for '--shutdown-grace': %q is not a duration such as 10s or 2m", v)
	}
	if d == 0 {
		return -1, nil
	}
	return d, nil
}

// abandonGrace reads --abandon-grace as server.Options.AbandonGrace: empty
// keeps the server's default; the duration must be positive.
func abandonGrace(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("Invalid value for '--abandon-grace': %q is not a positive duration such as 10s or 2m", v)
	}
	return d, nil
}
