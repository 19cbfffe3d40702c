package server

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tinkershell/tinker/lib/store"
)

// createSession starts a client session. A session that stops sending
// heartbeats for HeartbeatTimeout ends: later requests on it answer 410.
// See docs/protocol.md, "Sessions and heartbeats".
func (s *Server) createSession(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	var body struct {
		Tags         []string          `json:"tags"`
		UserMetadata map[string]string `json:"user_metadata"`
		SDKVersion   string            `json:"sdk_version"`
		ProjectID    string            `json:"project_id"`
	}
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	if e := checkList("tags", body.Tags); e != nil {
		return e
	}
	if e := checkMetadata("user_metadata", body.UserMetadata); e != nil {
		return e
	}
	if e := checkText("sdk_version", body.SDKVersion, maxStringLen); e != nil {
		return e
	}
	if e := checkText("project_id", body.ProjectID, maxIDLen); e != nil {
		return e
	}
	now := s.now()
	// Deterministic under a pinned clock (golden tests), unique otherwise;
	// serialised so concurrent creations under one clock reading differ.
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	n := len(s.st.ListSessions(owner, -1, 0))
	id := uuid.NewSHA1(ownerNamespace, fmt.Appendf(nil, "%s/%d/%d", owner, now.UnixNano(), n)).String()
	if err := s.st.CreateSession(store.Session{ID: id, Owner: owner, ProjectID: body.ProjectID, Tags: body.Tags,
		UserMetadata: body.UserMetadata, SDKVersion: body.SDKVersion, CreatedAt: now, LastHeartbeat: now}); err != nil {
		return storeFailure("session", err)
	}
	s.logRequest(id, "create_session", time.Now(), 200, "")
	writeJSON(w, 200, map[string]string{"session_id": id, "type": "create_session"})
	return nil
}

// liveSession checks the session belongs to the caller and is still alive.
func (s *Server) liveSession(owner, id string) (store.Session, *errorResponse) {
	se, _, _, ok := s.st.Session(id)
	if !ok || se.Owner != owner {
		return se, errorf(http.StatusNotFound, "Session %s not found", id)
	}
	if s.now().Sub(se.LastHeartbeat) > s.opts.HeartbeatTimeout {
		return se, errorf(http.StatusGone, "Session %s expired after missing heartbeats; create a new session", id)
	}
	return se, nil
}

func (s *Server) heartbeat(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	var body struct {
		SessionID string `json:"session_id"`
	}
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	if _, e := s.liveSession(owner, body.SessionID); e != nil {
		return e
	}
	if err := s.st.Heartbeat(body.SessionID, s.now()); err != nil {
		return storeFailure("session", err)
	}
	writeRaw(w, 200, []byte(`{"type":"session_heartbeat"}`))
	return nil
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	limit, offset, e := pageParams(r, 20)
	if e != nil {
		return e
	}
	if _, e := accessScope(r); e != nil {
		return e
	}
	writeJSON(w, 200, map[string]any{"sessions": s.st.ListSessions(owner, limit, offset)})
	return nil
}

func (s *Server) ownedSession(owner, id string) (store.Session, []string, []string, *errorResponse) {
	se, runs, samplers, ok := s.st.Session(id)
	if !ok || se.Owner != owner {
		return se, nil, nil, errorf(http.StatusNotFound, "Session %s not found", id)
	}
	return se, runs, samplers, nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request, owner string, seg []string) *errorResponse {
	if _, e := accessScope(r); e != nil {
		return e
	}
	_, runs, samplers, e := s.ownedSession(owner, seg[1])
	if e != nil {
		return e
	}
	if runs == nil {
		runs = []string{}
	}
	if samplers == nil {
		samplers = []string{}
	}
	writeJSON(w, 200, map[string]any{"training_run_ids": runs, "sampler_ids": samplers})
	return nil
}

func (s *Server) setProject(w http.ResponseWriter, r *http.Request, owner string, seg []string) *errorResponse {
	var body struct {
		ProjectID *string `json:"project_id"`
	}
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	if body.ProjectID == nil || *body.ProjectID == "" {
		return errorf(http.StatusBadRequest, "project_id is required; a session cannot be removed from its project")
	}
	if e := checkText("project_id", *body.ProjectID, maxIDLen); e != nil {
		return e
	}
	if _, _, _, e := s.ownedSession(owner, seg[1]); e != nil {
		return e
	}
	if err := s.st.SetSessionProject(seg[1], *body.ProjectID); err != nil {
		return storeFailure("session", err)
	}
	writeRaw(w, 200, []byte(`{}`))
	return nil
}

// Work stops when its caller goes (docs/protocol.md, "Cancellation"). The
// SDK's protocol has no cancel call, so the server watches what it can
// see: a session that stops heartbeating; and it takes tinker's own
// cancel_future (futures.go), sent by a client interrupted while it waits.
// A session that heartbeats is alive, however long it leaves between polls
// (a busy client, one backing off after a 429). Either cancels the
// session's work generation: every operation submitted on the session
// until then that has not finished stops (sampling between tokens,
// forward_backward before it touches the gradients, optim_step before it
// starts), while operations submitted afterwards run in a fresh
// generation, so a prompt that was interrupted keeps its session.
type sessionWork struct {
	mu   sync.Mutex
	gens map[string]*workGen // session id -> current generation
	reap sync.Once
}

type workGen struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// workContext is the context for work submitted now on session, done when
// its caller goes; work outside any session gets one never done.
func (s *Server) workContext(session string) context.Context {
	if session == "" {
		return context.Background()
	}
	w := &s.work
	w.reap.Do(func() { go s.reapSessions() })
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gens == nil {
		w.gens = map[string]*workGen{}
	}
	g := w.gens[session]
	if g == nil {
		// Not the server's context: Close lets training finish its queue
		// (trainstop.go); work that must stop on Close joins s.ctx too.
		ctx, cancel := context.WithCancel(context.Background())
		g = &workGen{ctx, cancel}
		w.gens[session] = g
	}
	return g.ctx
}

// cancelWork stops the work submitted on session so far.
func (s *Server) cancelWork(session, why string) {
	w := &s.work
	w.mu.Lock()
	g := w.gens[session]
	delete(w.gens, session)
	w.mu.Unlock()
	if g != nil {
		g.cancel()
		s.opts.Logf("session %s: work cancelled: %s", session, why)
	}
}

// reapSessions cancels the work of sessions that stopped heartbeating,
// checking every second until the server closes.
func (s *Server) reapSessions() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		s.work.mu.Lock()
		ids := make([]string, 0, len(s.work.gens))
		for id := range s.work.gens {
			ids = append(ids, id)
		}
		s.work.mu.Unlock()
		for _, id := range ids {
			if se, _, _, ok := s.st.Session(id); !ok || s.now().Sub(se.LastHeartbeat) > s.opts.HeartbeatTimeout {
				s.cancelWork(id, "the session stopped heartbeating")
			}
		}
	}
}

// cancelled turns the error of work stopped because its caller went (ctx
// is a workContext) into a user error saying so; other errors, and work
// stopped by the server closing, pass unchanged.
func (s *Server) cancelled(ctx context.Context, what string, err error) error {
	if ctx.Err() == nil || s.ctx.Err() != nil {
		return err
	}
	return userErrorf("%s cancelled: its client stopped waiting for it or its session stopped heartbeating; nothing was applied, send it again", what)
}

// eitherDone is a context done when a or b is.
func eitherDone(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return ctx, func() { stop(); cancel() }
}
