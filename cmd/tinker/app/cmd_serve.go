package app

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/server"
	"github.com/tinkershell/tinker/shell"
)

var serveCmd = &command{
	Name:    "serve",
	Summary: "Run the local Tinker server.",
	Help: "Serve the Tinker HTTP API from DIR (SQLite database and checkpoint files).\n" +
		"Without --api-key any key starting with tml- is accepted, each one a user;\n" +
		"a non-loopback --addr requires explicit keys.\n\n" +
		"tinker serve import --data DIR FILE loads runs and checkpoints from a JSON\n" +
		"manifest (see lib/server/MANIFEST.md).",
	Args: []argSpec{{Name: "import FILE", Optional: true, Variadic: true}},
	Flags: []flagSpec{
		{Long: "--data", Kind: flagPath, Metavar: "DIR", Help: "Data directory (default $XDG_DATA_HOME/tinker)."},
		{Long: "--addr", Kind: flagString, Metavar: "HOST:PORT", Help: "Listen address (default 127.0.0.1:8000)."},
		{Long: "--api-key", Kind: flagMulti, Metavar: "KEY", Help: "Accept only this key (repeatable); each key is a user."},
		{Long: "--model", Kind: flagMulti, Metavar: "NAME=DIR", Help: "Sample base model NAME from a Hugging Face model directory (repeatable)."},
	},
	Run: runServe,
}

func runServe(c *invocation) int {
	dir := c.str("data")
	if dir == "" {
		dir = DataDir()
	}
	if len(c.args) > 0 {
		if c.args[0] != "import" || len(c.args) != 2 {
			return c.usageError("Usage: tinker serve import --data DIR FILE")
		}
		return runImport(c, dir, c.args[1])
	}
	addr := c.str("addr")
	if addr == "" {
		addr = "127.0.0.1:8000"
	}
	dirs, err := modelDirs(c.multi("model"))
	if err != nil {
		return c.usageError(err.Error())
	}
	// Keys come from flags only; they are never echoed.
	srv, err := server.Open(server.Options{DataDir: dir, APIKeys: c.multi("api-key"), Now: c.now,
		Sampler: server.EngineSampler(&engine.Pool{Dirs: dirs})})
	if err != nil {
		fmt.Fprintf(c.io.Err, "Error: %v\n", err)
		return shell.ExitError
	}
	defer srv.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(c.io.Err, "tinker server on http://%s (data %s); set TINKER_BASE_URL=http://%s\n", addr, dir, addr)
	if err := srv.ListenAndServe(ctx, addr); err != nil && ctx.Err() == nil {
		fmt.Fprintf(c.io.Err, "Error: %v\n", err)
		return shell.ExitError
	}
	return shell.ExitOK
}

func runImport(c *invocation, dir, file string) int {
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintf(c.io.Err, "Error: cannot read manifest: %v\n", err)
		return shell.ExitError
	}
	defer f.Close()
	start := time.Now()
	stats, err := server.Import(context.Background(), dir, f, c.now())
	if err != nil {
		fmt.Fprintf(c.io.Err, "Error: import %s: %v\n", file, err)
		return shell.ExitError
	}
	fmt.Fprintf(c.io.Err, "Imported %d runs and %d checkpoints into %s in %.2fs\n", stats.Runs, stats.Checkpoints, dir, time.Since(start).Seconds())
	return shell.ExitOK
}

// modelDirs parses --model NAME=DIR values.
func modelDirs(values []string) (map[string]string, error) {
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
	}
	return dirs, nil
}
