// Package server is the local Tinker-compatible HTTP server: the REST
// endpoints for runs, checkpoints, sessions and billing, signed archive
// downloads, and the session/futures endpoints the SDK uses to create models,
// train, save checkpoints and sample. State lives in lib/store (SQLite) and
// checkpoint files under DataDir/checkpoints. docs/protocol.md describes the
// wire protocol as this package implements it.
//
// Files by concern: routes.go (the endpoint table and dispatch), auth.go,
// respond.go (request bodies, error responses), limits.go (request bounds),
// futures.go (the futures table and retrieve_future), sessions.go,
// models.go (create_model, get_info), modeldir.go (--model directories under
// their own names), weights.go (save and load weights), sampling.go
// (sampling sessions and asample) with sampleresult.go (its JSON and
// protobuf results), training.go (forward, forward_backward, optim_step)
// with fwdbwd.go (their bodies), trainer.go (per-model trainers and seq_id
// order), trainstate.go (trained checkpoints), memory.go (the default
// training budget), trainmemory.go (queue and trainer limits), trainstop.go
// (stopping with training in flight), trainsnapshot.go and futurekeep.go
// (what a clean restart keeps), nonfinite.go (NaN and ±Inf results), hub.go (tokenizer files for Hugging Face clients),
// rest.go (runs and checkpoints listings), archive.go (checkpoint files),
// download.go (signed URLs) with tarview.go, trace.go, billing.go,
// cleanup.go (expiry sweep, orphans), import.go, trainwatch.go (training
// events for the web console, lib/console).
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/store"
)

// Options configures a Server.
type Options struct {
	DataDir string
	// APIKeys, when set, are the only accepted keys (each one a user).
	// Without keys any key starting with "tml-" is accepted.
	APIKeys []string
	// Now is the clock (tests and golden files pin it); default time.Now.
	Now func() time.Time
	// Logf receives one line per request and background events; nil = silent.
	Logf func(format string, args ...any)
	// SweepInterval is how often expired checkpoints are deleted (default 30s;
	// negative disables the background sweeper, e.g. in tests that call Sweep).
	SweepInterval time.Duration
	// ArchiveSyncLimit: archives up to this size are generated while the
	// request waits; larger ones answer 503 "being generated" meanwhile.
	// Default 256 MiB.
	ArchiveSyncLimit int64
	// Sampler serves asample; nil answers asample with a clear error.
	Sampler Sampler
	// FutureDelay holds a finished future's result back until this long
	// after submission. Zero (the default) returns it as soon as it exists;
	// retrieve_future long-polls, so clients need no delay to poll well.
	// Tests that exercise try_again polls set it.
	FutureDelay time.Duration
	// MaxPendingSamples bounds unfinished asample requests; beyond it a
	// client that opted in with X-Tinker-Sampling-Backpressure: 1 gets 429
	// and resubmits (docs/protocol.md, "Sampling"). Default 256.
	MaxPendingSamples int
	// AbandonGrace is how long a running future outside any session waits
	// for its next poll, once a poll ended, before its work is cancelled
	// (default 60s; futures.go). Futures of a session stop with its
	// heartbeats or when their client cancels them, never on a poll gap.
	AbandonGrace time.Duration
	// PollHold is how long retrieve_future holds a poll open waiting for the
	// result before answering try_again (long poll; default 2s).
	PollHold time.Duration
	// HeartbeatTimeout ends sessions that stopped heartbeating (default 2m).
	HeartbeatTimeout time.Duration
	// BodyTimeout is how long a request's body may take to arrive (default
	// 2m); MaxConns and MaxConnsPerClient bound the connections of all
	// clients and of one remote address (defaults: half the open-file
	// limit, at most 1024; 256). See connlimit.go.
	BodyTimeout                 time.Duration
	MaxConns, MaxConnsPerClient int
	// SnapshotBytesPerUser bounds the disk one user's idle trainers may
	// take once written out to make room (default 1 GiB; trainsnapshot.go).
	SnapshotBytesPerUser int64
	// Engine loads base models for training (forward, forward_backward,
	// optim_step); nil answers them with a clear error. Pass the pool the
	// Sampler uses, so both share one copy of each model.
	Engine *engine.Pool
	// TrainMemory bounds the activation memory of the training passes
	// running at once, in bytes (default DefaultTrainMemory()). A request
	// that alone needs more is refused with a 400.
	TrainMemory int64
	// TrainConcurrency is how many training passes run at once over all
	// models (default 1), so sampling keeps cores while models train.
	TrainConcurrency int
	// MaxPendingTrain bounds one user's queued forward/forward_backward
	// requests; beyond it they get 429 and clients resubmit (default 64).
	// TrainMemory bounds their bytes too (trainmemory.go).
	MaxPendingTrain int
	// SeqGapTimeout is how long a model's operation waits for a missing
	// lower seq_id before it runs anyway (default 30s).
	SeqGapTimeout time.Duration
	// KeepTrainers writes the models' training state at Close and restores
	// it after a restart (trainsnapshot.go). tinker serve sets it: its
	// clients outlive it. An in-process server's models end with the
	// process that uses them, so it would only leave files behind.
	KeepTrainers bool
	// JWT turns on the JWT exchange (jwt.go): clients trade their key for
	// a token at auth/token and send the token instead, as the service
	// asks them to. JWTLifetime is a token's life (default 1h).
	JWT         bool
	JWTLifetime time.Duration
	// ShutdownGrace is how long Close lets the models' queued operations
	// run before it halts the rest (0: 30s; negative: at once; trainstop.go). Without
	// KeepTrainers nothing would survive the stop, so Close halts at once.
	ShutdownGrace time.Duration
	// PrivatePaths are directories (e.g. --model NAME=DIR) that, like the
	// data directory and the Hugging Face cache, never appear in answers.
	PrivatePaths []string
	// OnTrain, when set, is told of each finished training operation
	// (trainwatch.go); it must return quickly.
	OnTrain func(TrainEvent)
	// Wrap, when set, wraps the API's handler: the web console
	// (lib/console) serves its pages beside the API this way.
	Wrap func(api http.Handler) http.Handler
}

// Server is one local Tinker service over a data directory.
type Server struct {
	opts    Options
	st      *store.Store
	keys    map[string]bool // sha256 hex of configured keys
	handler http.Handler
	private []privatePath // hidden from clients by scrub

	authCache sync.Map // sha256 hex of key -> urn
	jwtSecret []byte   // signs JWTs when Options.JWT

	archives *archiver
	traces   *tracer
	futures  *futureTable
	trainers *trainers
	samples  atomic.Int64 // unfinished asample futures
	work     sessionWork  // cancels the work of callers that went (sessions.go)
	idem     idemTable    // answers replayed to retries (idempotency.go)

	trainLog  *trainLog       // training events for TrainHistory
	ctx       context.Context // cancelled by Close: stops running samples
	cancel    context.CancelFunc
	stopSweep chan struct{}
	sweepDone chan struct{}
	sessMu    sync.Mutex // create_session id assignment
	mu        sync.Mutex
	httpSrvs  []*http.Server
	closed    bool
}

// Open opens (or creates) the data directory and returns a server.
func Open(opts Options) (*Server, error) {
	if opts.DataDir == "" {
		return nil, errors.New("server: a data directory is required (--data DIR)")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = 30 * time.Second
	}
	if opts.ArchiveSyncLimit == 0 {
		opts.ArchiveSyncLimit = 256 << 20
	}
	if opts.MaxPendingSamples == 0 {
		opts.MaxPendingSamples = 256
	}
	if opts.AbandonGrace == 0 {
		opts.AbandonGrace = defaultAbandonGrace
	}
	if opts.PollHold == 0 {
		opts.PollHold = 2 * time.Second
	}
	if opts.HeartbeatTimeout == 0 {
		opts.HeartbeatTimeout = 2 * time.Minute
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = defaultBodyTimeout
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = defaultMaxConns()
	}
	if opts.MaxConnsPerClient <= 0 {
		opts.MaxConnsPerClient = defaultMaxConnsPerClient
	}
	if opts.SnapshotBytesPerUser <= 0 {
		opts.SnapshotBytesPerUser = defaultSnapshotBytesPerUser
	}
	if opts.TrainMemory <= 0 {
		opts.TrainMemory = DefaultTrainMemory()
	}
	if opts.TrainConcurrency <= 0 {
		opts.TrainConcurrency = 1
	}
	if opts.MaxPendingTrain <= 0 {
		opts.MaxPendingTrain = 64
	}
	if opts.SeqGapTimeout <= 0 {
		opts.SeqGapTimeout = 30 * time.Second
	}
	if opts.JWTLifetime <= 0 {
		opts.JWTLifetime = defaultJWTLifetime
	}
	if opts.ShutdownGrace == 0 {
		opts.ShutdownGrace = 30 * time.Second
	}
	st, err := store.Open(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("open data dir %s: %w", opts.DataDir, err)
	}
	var secret []byte
	if opts.JWT {
		if secret, err = loadJWTSecret(opts.DataDir); err != nil {
			st.Close()
			return nil, err
		}
	}
	s := &Server{opts: opts, st: st, keys: map[string]bool{}, jwtSecret: secret, stopSweep: make(chan struct{}), sweepDone: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	for _, k := range opts.APIKeys {
		s.keys[hashKey(k)] = true
	}
	s.archives = newArchiver(s)
	s.traces = newTracer(s)
	s.futures = newFutureTable()
	s.trainers = newTrainers(opts)
	s.trainLog = newTrainLog(st, opts.Logf)
	if n, err := s.futures.restore(s.keptFuturesPath()); err != nil {
		opts.Logf("%v", err)
	} else if n > 0 {
		opts.Logf("kept %d result(s) of training operations across the restart", n)
	}
	s.private = privatePaths(opts.DataDir, opts.PrivatePaths)
	s.handler = s.routes()
	if opts.Wrap != nil {
		s.handler = opts.Wrap(s.handler)
	}
	if n := s.cleanupOrphans(); n > 0 {
		opts.Logf("removed %d orphaned checkpoint director(ies) left by an earlier crash", n)
	}
	s.ensureReserve()
	if opts.SweepInterval > 0 {
		go s.sweepLoop()
	} else {
		close(s.sweepDone)
	}
	return s, nil
}

// Store exposes the underlying store (for the import command and tests).
func (s *Server) Store() *store.Store { return s.st }

func (s *Server) now() time.Time { return s.opts.Now().UTC() }

// Handler is the HTTP handler for the whole API.
func (s *Server) Handler() http.Handler { return s.handler }

// ListenAndServe serves on addr until ctx is cancelled. It refuses a
// non-loopback address unless explicit API keys were configured.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	ln, err := Listen(addr, len(s.opts.APIKeys) > 0)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Listen binds addr for Serve, refusing a non-loopback address unless the
// server will have explicit keys. Binding before Open lets a caller fail
// before it creates anything or announces a server.
func Listen(addr string, haveKeys bool) (net.Listener, error) {
	if err := checkAddr(addr, haveKeys); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// Serve answers requests on ln until ctx is cancelled, then shuts down.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := s.newHTTPServer()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	if err := hs.Serve(s.limitListener(ln)); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// Start serves in the background (for tinker --local and tests) and returns
// the base URL, e.g. "http://127.0.0.1:40123". Use addr "127.0.0.1:0" for
// any free port.
func (s *Server) Start(addr string) (string, error) {
	if err := checkAddr(addr, len(s.opts.APIKeys) > 0); err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen on %s: %w", addr, err)
	}
	hs := s.newHTTPServer()
	go hs.Serve(s.limitListener(ln))
	return "http://" + ln.Addr().String(), nil
}

func (s *Server) newHTTPServer() *http.Server {
	hs := &http.Server{Handler: s.guard(s.handler), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		MaxHeaderBytes: maxHeaderBytes, ConnContext: connContext}
	s.mu.Lock()
	s.httpSrvs = append(s.httpSrvs, hs)
	s.mu.Unlock()
	return hs
}

func checkAddr(addr string, haveKeys bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bad listen address %q: %w", addr, err)
	}
	if haveKeys {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to listen on non-loopback address %s without explicit API keys: pass --api-key KEY (any client could otherwise use this server), or listen on 127.0.0.1", addr)
}

// Close stops background work and HTTP servers started here, and closes the database.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	srvs := s.httpSrvs
	s.mu.Unlock()
	for _, hs := range srvs {
		hs.Close()
	}
	grace := time.Duration(0)
	if s.opts.KeepTrainers {
		grace = s.opts.ShutdownGrace
	}
	s.trainers.drain(grace)
	s.cancel()
	select {
	case <-s.sweepDone:
	default:
		close(s.stopSweep)
		<-s.sweepDone
	}
	s.futures.close()
	if s.opts.KeepTrainers {
		s.trainers.snapshotAll(s.opts.Logf)
		if err := s.futures.keep(s.keptFuturesPath()); err != nil {
			s.opts.Logf("%v", err)
		}
	}
	s.archives.wait()
	s.traces.wait()
	s.trainLog.close()
	return s.st.Close()
}

// keptFuturesPath is where Close keeps the results of model operations
// for the restarted server (futurekeep.go).
func (s *Server) keptFuturesPath() string {
	return filepath.Join(s.opts.DataDir, "trainers", keptFuturesFile)
}

// deleteCheckpoint deletes the row, then the files. On a full disk SQLite
// may have no room to record the delete: the checkpoint's files (which can
// be generated again from its row) and the spare file go first, then the
// row is deleted again.
func (s *Server) deleteCheckpoint(runID, kind, name string) error {
	err := s.st.DeleteCheckpoint(runID, kind, name)
	if isDiskFull(err) {
		s.opts.Logf("disk full: deleting the files of %s/%s/%s and the spare file first", runID, kind, name)
		s.archives.remove(runID, kind, name)
		s.releaseReserve()
		err = s.st.DeleteCheckpoint(runID, kind, name)
	}
	if err != nil {
		return err
	}
	if s.opts.Engine != nil {
		// A checkpoint saved again under this name will hold other weights.
		s.opts.Engine.DropAdapter(s.checkpointDir(runID, kind, name))
	}
	if err := s.archives.remove(runID, kind, name); err != nil {
		return err
	}
	s.ensureReserve()
	return nil
}

// checkpointDir is where a checkpoint's files live. Run ids and names are
// validated (no "/", not "." or "..") before they reach here; escaping keeps
// other odd characters out of the file system.
func (s *Server) checkpointDir(runID, kind, name string) string {
	return checkpointPath(s.opts.DataDir, runID, kind, name)
}

// checkpointPath is where a checkpoint's files live under dataDir.
func checkpointPath(dataDir, runID, kind, name string) string {
	return filepath.Join(dataDir, "checkpoints", url.PathEscape(runID), kind, url.PathEscape(name))
}
