package tinkerapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Heartbeat defaults (docs/protocol.md, "Sessions and heartbeats").
const (
	DefaultHeartbeatInterval = 10 * time.Second
	DefaultHeartbeatWarn     = 120 * time.Second
	heartbeatTimeout         = 10 * time.Second
)

// SessionOptions configures CreateSession. Zero values take the defaults.
type SessionOptions struct {
	Tags         []string          // sent as [] when empty
	UserMetadata map[string]string // sent as {} when empty
	ProjectID    string            // omitted when empty

	// HeartbeatInterval is the time between session_heartbeat calls
	// (default 10 s); HeartbeatWarnAfter is how long heartbeats may fail
	// in a row before OnWarning is called (default 120 s).
	HeartbeatInterval  time.Duration
	HeartbeatWarnAfter time.Duration
	// OnWarning receives background problems: heartbeats failing for
	// HeartbeatWarnAfter (once per run of failures), or the server
	// ending the session. It runs on a goroutine of its own, so it may
	// call Close. Nil logs them through Config.Logf.
	OnWarning func(error)
	// OnState receives the progress of every future the session awaits
	// (queued → running → done), for a live status line. It runs on the
	// calling goroutine (so concurrently for concurrent calls) and must
	// not block.
	OnState func(State)
	// Timings tunes future polling and sampling backpressure waits.
	Timings PollTimings
}

// SessionOptionsFromEnv reads TINKER_TAGS (comma-separated, deduplicated)
// and TINKER_PROJECT_ID. getenv nil means os.Getenv.
func SessionOptionsFromEnv(getenv func(string) string) SessionOptions {
	if getenv == nil {
		getenv = os.Getenv
	}
	var o SessionOptions
	seen := map[string]bool{}
	for _, t := range strings.Split(getenv("TINKER_TAGS"), ",") {
		if t = strings.TrimSpace(t); t != "" && !seen[t] {
			seen[t] = true
			o.Tags = append(o.Tags, t)
		}
	}
	o.ProjectID = strings.TrimSpace(getenv("TINKER_PROJECT_ID"))
	return o
}

// ErrSessionClosed is returned by operations on a closed Session.
var ErrSessionClosed = errors.New("session is closed")

// Session is an open training/sampling session: it heartbeats in the
// background until Close and numbers the requests the server orders by
// (model_seq_id, sampling_session_seq_id, per-model and per-sampler
// seq_id; docs/protocol.md, "Sessions and heartbeats").
// It is safe for concurrent use.
type Session struct {
	c    *Client
	id   string
	opts SessionOptions
	msgs ServerMessages

	modelSeq    atomic.Int64 // next model_seq_id
	samplingSeq atomic.Int64 // next sampling_session_seq_id
	mu          sync.Mutex
	modelOps    map[string]*atomic.Int64 // model id → last seq_id used
	samplerOps  map[string]*atomic.Int64 // sampling session id → next seq_id

	stop      context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
	closed    atomic.Bool
	lost      atomic.Pointer[error] // the server ended the session
}

// ServerMessages are the optional notices of a create_session answer.
type ServerMessages struct {
	Info, Warning, Error string
}

// CreateSession opens a session and starts its heartbeat. ctx bounds only
// the create_session call; the session lives until Close, which the
// caller must call (also on Ctrl-C) to stop the heartbeat.
func (c *Client) CreateSession(ctx context.Context, opts SessionOptions) (*Session, error) {
	setDefault(&opts.HeartbeatInterval, DefaultHeartbeatInterval)
	setDefault(&opts.HeartbeatWarnAfter, DefaultHeartbeatWarn)
	tags := opts.Tags
	if tags == nil {
		tags = []string{}
	}
	meta := opts.UserMetadata
	if meta == nil {
		meta = map[string]string{}
	}
	req := struct {
		Tags         []string          `json:"tags"`
		UserMetadata map[string]string `json:"user_metadata"`
		SDKVersion   string            `json:"sdk_version"`
		ProjectID    string            `json:"project_id,omitempty"`
		Type         string            `json:"type"`
	}{tags, meta, SDKVersion, opts.ProjectID, "create_session"}
	var resp struct {
		SessionID      string `json:"session_id"`
		InfoMessage    string `json:"info_message"`
		WarningMessage string `json:"warning_message"`
		ErrorMessage   string `json:"error_message"`
	}
	if err := c.Do(ctx, http.MethodPost, "/api/v1/create_session", req, &resp, WithValidator(requireFields("session_id"))); err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	s := &Session{c: c, id: resp.SessionID, opts: opts,
		msgs:     ServerMessages{resp.InfoMessage, resp.WarningMessage, resp.ErrorMessage},
		modelOps: map[string]*atomic.Int64{}, samplerOps: map[string]*atomic.Int64{},
		done: make(chan struct{})}
	// The heartbeat outlives ctx, which may belong to a single call.
	hctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	go s.heartbeat(hctx)
	return s, nil
}

// ID returns the server's session id.
func (s *Session) ID() string { return s.id }

// Client returns the client the session talks through.
func (s *Session) Client() *Client { return s.c }

// Messages returns the notices the server sent with create_session.
func (s *Session) Messages() ServerMessages { return s.msgs }

// Err reports whether the server ended the session (a heartbeat answered
// 404 or 410); heartbeats have stopped then, and a new session is needed.
func (s *Session) Err() error {
	if p := s.lost.Load(); p != nil {
		return *p
	}
	return nil
}

// Close stops the heartbeat and waits for it to finish. The service has
// no close-session call: it ends the session once heartbeats stop. Close
// is idempotent and safe to call from a signal handler goroutine.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.stop()
		<-s.done
	})
	return nil
}

func (s *Session) checkOpen() error {
	if s.closed.Load() {
		return fmt.Errorf("session %s: %w", s.id, ErrSessionClosed)
	}
	return nil
}

func (s *Session) heartbeat(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.opts.HeartbeatInterval)
	defer t.Stop()
	lastOK := time.Now()
	warned := false
	body := map[string]string{"session_id": s.id, "type": "session_heartbeat"}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.c.Do(ctx, http.MethodPost, "/api/v1/session_heartbeat", body, nil,
			WithoutRetries(), WithTimeout(heartbeatTimeout))
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			lastOK, warned = time.Now(), false
			continue
		}
		var apiErr *APIError
		if errors.As(err, &apiErr) && (apiErr.Status == http.StatusNotFound || apiErr.Status == http.StatusGone) {
			lost := fmt.Errorf("session %s was ended by the server (heartbeat answered %d); start a new session: %w", s.id, apiErr.Status, err)
			s.lost.Store(&lost)
			s.warn(lost)
			return
		}
		if failing := time.Since(lastOK); !warned && failing >= s.opts.HeartbeatWarnAfter {
			warned = true
			s.warn(fmt.Errorf("session %s: heartbeats failing for %s; the server may end the session: %w",
				s.id, failing.Round(time.Second), err))
		}
	}
}

func (s *Session) warn(err error) {
	if s.opts.OnWarning != nil {
		go s.opts.OnWarning(err)
		return
	}
	s.c.logf("warning: %v", err)
}

// nextModelSeq returns the next seq_id for an operation on modelID
// (create_model is implicitly 0, so the first operation gets 1).
func (s *Session) nextModelSeq(modelID string) int64 {
	return s.counter(s.modelOps, modelID).Add(1)
}

// nextSampleSeq returns the next seq_id for an asample on a sampler,
// counting from 0.
func (s *Session) nextSampleSeq(samplerID string) int64 {
	return s.counter(s.samplerOps, samplerID).Add(1) - 1
}

// counter returns id's counter in m, creating it at 0.
func (s *Session) counter(m map[string]*atomic.Int64, id string) *atomic.Int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctr := m[id]
	if ctr == nil {
		ctr = new(atomic.Int64)
		m[id] = ctr
	}
	return ctr
}

// await runs Client.Await with the session's status callback and timings.
func (s *Session) await(ctx context.Context, h futureHandle, kind string, submitted time.Time, out any, proto bool) error {
	return s.c.Await(ctx, h.RequestID, kind, out, AwaitOptions{Proto: proto, OnState: s.opts.OnState,
		SubmittedAt: submitted, Timings: s.opts.Timings, NumericID: h.numeric})
}

// submit posts a future-returning request and checks the answer has a
// request id.
func (s *Session) submit(ctx context.Context, path string, body any, opts ...Option) (futureHandle, error) {
	var h futureHandle
	opts = append(opts, WithValidator(requireFields("request_id")))
	if err := s.c.Do(ctx, http.MethodPost, path, body, &h, opts...); err != nil {
		return h, err
	}
	return h, nil
}
