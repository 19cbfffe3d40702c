package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tinkershell/tinker/lib/console"
	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/server"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/shell"
)

// tinker console: the web console (lib/console) on its own, against the
// chosen backend; tinker serve mounts the same console beside its API.

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
	addr := c.str("addr")
	if addr == "" {
		addr = "127.0.0.1:8001"
	}
	if err := console.CheckLoopback(addr); err != nil {
		return c.usageError(err.Error())
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(c.io.Err, "Error: listen on %s: %v\n", addr, err)
		return shell.ExitError
	}
	defer ln.Close()
	url := console.LoopbackURL(ln.Addr().String())
	base := url
	if !c.opts.local {
		if base = tinkerapi.ConfigFromEnv(c.opts.env).BaseURL; base == "" {
			base = tinkerapi.DefaultBaseURL
		}
	}
	con, err := console.New(console.Options{BaseURL: base, LogDirs: c.multi("log-dir"), Now: c.now})
	if err != nil {
		fmt.Fprintf(c.io.Err, "Error: %v\n", err)
		return shell.ExitError
	}
	handler, stop, err := consoleHandler(c, con)
	if err != nil {
		fmt.Fprintf(c.io.Err, "Error: %v\n", err)
		return shell.ExitError
	}
	defer stop()
	fmt.Fprintf(c.io.Err, "Web console for %s: open %s/ in a browser on this machine and sign in with your API key (Ctrl-C stops it)\n", base, url)
	if c.opts.local {
		fmt.Fprintf(c.io.Err, "Local server (data %s): sign in as %s to see tinker --local's runs; point training scripts at it with TINKER_BASE_URL=%s\n", DataDir(), server.LocalUserKey, url)
	}
	return serveUntilSignal(c, ln, handler)
}

// consoleHandler is the console alone, or with --local the console over
// an in-process local server (the default data directory) on its address.
func consoleHandler(c *invocation, con *console.Console) (http.Handler, func(), error) {
	if !c.opts.local {
		return con.Handler(), func() {}, nil
	}
	dirs, err := modelDirs(c.opts.models)
	if err != nil {
		return nil, nil, err
	}
	pool := &engine.Pool{Dirs: dirs}
	srv, err := server.Open(server.Options{DataDir: DataDir(), Now: c.now, Sampler: server.EngineSampler(pool), Engine: pool,
		Wrap: con.Wrap, OnTrain: con.Curves().OnTrain})
	if err != nil {
		return nil, nil, fmt.Errorf("local server: %w", err)
	}
	con.Curves().SetHistory(srv.TrainHistory)
	return srv.Handler(), func() { srv.Close() }, nil
}

// serveUntilSignal serves h on ln until Ctrl-C or SIGTERM.
func serveUntilSignal(c *invocation, ln net.Listener, h http.Handler) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintf(c.io.Err, "Error: %v\n", err)
		return shell.ExitError
	}
	return shell.ExitOK
}
