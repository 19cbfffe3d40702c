// Package localserver is the half of tinker that runs a Tinker server
// in-process (lib/server with SQLite, the engine, the web console). Only
// tinker-local and tests link it; tinker reaches it through
// cmd/tinker/localapi by handing its process over to tinker-local.
package localserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/tinkershell/tinker/cmd/tinker/localapi"
	"github.com/tinkershell/tinker/lib/console"
	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/server"
)

// Server implements localapi.Server.
type Server struct{}

var _ localapi.Server = Server{}

func (Server) RegisterModelDir(name, dir string) error { return server.RegisterModelDir(name, dir) }

func (Server) BF16ComputeAvailable() bool { return engine.BF16ComputeAvailable() }

func (Server) Backend(dataDir string, models map[string]string, now func() time.Time) (func() (string, error), func()) {
	var srv *server.Server
	start := func() (string, error) {
		var err error
		pool := &engine.Pool{Dirs: models}
		srv, err = server.Open(server.Options{DataDir: dataDir, Now: now, Sampler: server.EngineSampler(pool), Engine: pool})
		if err != nil {
			return "", fmt.Errorf("local server: %w", err)
		}
		return srv.Start("127.0.0.1:0")
	}
	stop := func() {
		if srv != nil {
			srv.Close()
		}
	}
	return start, stop
}

func (Server) Serve(ctx context.Context, o localapi.ServeOptions) error {
	// Keys are never echoed; a file or the environment keeps them out of
	// the process list.
	keys, err := server.CollectAPIKeys(o.APIKeys, o.APIKeyFile, o.KeysFromEnv)
	if err != nil {
		return err
	}
	var private []string
	for _, d := range o.Models {
		private = append(private, d)
	}
	// Bind first: a taken or refused address fails before the data
	// directory is created or a server announced.
	ln, err := server.Listen(o.Addr, len(keys) > 0)
	if err != nil {
		return err
	}
	defer ln.Close()
	pool := &engine.Pool{Dirs: o.Models, Options: engine.LoadOptions{BF16Compute: o.BF16Compute}}
	bound := ln.Addr().String()
	con, err := console.New(console.Options{BaseURL: console.LoopbackURL(bound), LogDirs: o.ConsoleLogDirs, Now: o.Now})
	if err != nil {
		return err
	}
	srv, err := server.Open(server.Options{DataDir: o.DataDir, APIKeys: keys, Now: o.Now, Logf: o.Logf,
		Sampler: server.EngineSampler(pool), Engine: pool, TrainMemory: o.TrainMemory, PrivatePaths: private, KeepTrainers: true, JWT: o.JWT,
		ShutdownGrace: o.ShutdownGrace, AbandonGrace: o.AbandonGrace, Wrap: con.Wrap, OnTrain: con.Curves().OnTrain})
	if err != nil {
		return err
	}
	defer srv.Close()
	con.Curves().SetHistory(srv.TrainHistory)
	fmt.Fprintf(o.Err, "tinker server on http://%s (data %s); set TINKER_BASE_URL=http://%s\n", bound, o.DataDir, bound)
	fmt.Fprintf(o.Err, "Hugging Face clients (tokenizers of the tiny models): set HF_ENDPOINT=http://%s\n", bound)
	fmt.Fprintf(o.Err, "Web console: open %s/ in a browser on this machine and sign in with your API key\n", console.LoopbackURL(bound))
	if err := srv.Serve(ctx, ln); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

func (Server) Console(ctx context.Context, o localapi.ConsoleOptions) error {
	if err := console.CheckLoopback(o.Addr); err != nil {
		return &localapi.UsageError{Msg: err.Error()}
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Addr, err)
	}
	defer ln.Close()
	url := console.LoopbackURL(ln.Addr().String())
	base := o.BaseURL
	if o.Local {
		base = url
	}
	con, err := console.New(console.Options{BaseURL: base, LogDirs: o.LogDirs, Now: o.Now})
	if err != nil {
		return err
	}
	handler, stop, err := consoleHandler(o, con)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(o.Err, "Web console for %s: open %s/ in a browser on this machine and sign in with your API key (Ctrl-C stops it)\n", base, url)
	if o.Local {
		fmt.Fprintf(o.Err, "Local server (data %s): sign in as %s to see tinker --local's runs; point training scripts at it with TINKER_BASE_URL=%s\n", o.DataDir, server.LocalUserKey, url)
	}
	return serveUntilDone(ctx, ln, handler)
}

// consoleHandler is the console alone, or with --local the console over
// an in-process local server on its address.
func consoleHandler(o localapi.ConsoleOptions, con *console.Console) (http.Handler, func(), error) {
	if !o.Local {
		return con.Handler(), func() {}, nil
	}
	pool := &engine.Pool{Dirs: o.Models}
	srv, err := server.Open(server.Options{DataDir: o.DataDir, Now: o.Now, Sampler: server.EngineSampler(pool), Engine: pool,
		Wrap: con.Wrap, OnTrain: con.Curves().OnTrain})
	if err != nil {
		return nil, nil, fmt.Errorf("local server: %w", err)
	}
	con.Curves().SetHistory(srv.TrainHistory)
	return srv.Handler(), func() { srv.Close() }, nil
}

// serveUntilDone serves h on ln until ctx ends (Ctrl-C or SIGTERM).
func serveUntilDone(ctx context.Context, ln net.Listener, h http.Handler) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (Server) Import(ctx context.Context, dataDir string, manifest io.Reader, now time.Time) (int, int, error) {
	stats, err := server.Import(ctx, dataDir, manifest, now)
	return stats.Runs, stats.Checkpoints, err
}

func (Server) ImportAdapter(ctx context.Context, dataDir, dir, baseModel, name string, now time.Time) (localapi.Adapter, error) {
	a, err := server.ImportAdapter(ctx, dataDir, dir, baseModel, name, now)
	return localapi.Adapter{RunID: a.RunID, Path: a.Path, SamplerPath: a.SamplerPath, Rank: a.Rank, Targets: a.Targets}, err
}
