package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// future is one asynchronous request. Endpoints that do work (create_model,
// the saves, load_weights, asample) answer at once with a request_id, and
// the client polls retrieve_future until the result is ready. Futures live
// in memory only: after a restart, once collected (plus a short grace for a
// lost answer), or an hour unclaimed, a poll answers 410 and the client
// resubmits. See docs/protocol.md, "Futures".
type future struct {
	id        string    // random, unguessable
	owner     string    // only the creator may retrieve it
	readyAt   time.Time // wall clock: results are held back until then
	createdAt time.Time
	done      chan struct{}
	result    []byte // JSON result (nil when proto is set and asked for)
	proto     []byte // protobuf result for sample futures
	failure   []byte // {"error","category"} JSON

	model   string             // the model whose ordered operation this is, if any
	halted  bool               // the operation did not run: the server stopped (trainstop.go)
	session string             // whose work it is; "" outside a session (sessions.go)
	cancel  context.CancelFunc // stops this future's own work, or nil

	// Guarded by the table's mu.
	sentMeta    bool
	collectedAt time.Time   // when a final answer was first sent; zero before
	polling     int         // retrieve_future requests waiting on it now
	abandon     *time.Timer // fires AbandonGrace after the last poll ended
}

// futureTable holds the futures by id (constant-time lookups) and, per
// owner, in creation order, which bounds each user's outstanding futures
// and the work a poll does to compute its queue state.
type futureTable struct {
	wg      sync.WaitGroup // running work, waited for by Close
	mu      sync.Mutex
	m       map[string]*future
	byOwner map[string][]*future // creation order
	pending map[string]int       // slots admitted but not yet registered
	stop    chan struct{}
	stopped chan struct{}
}

// How long futures are kept. A collected result stays for futureGrace so a
// client whose answer was lost can poll again; a result nobody collects is
// dropped after futureMaxAge.
const (
	futureGrace  = 30 * time.Second
	futureMaxAge = time.Hour
)

func newFutureTable() *futureTable {
	t := &futureTable{m: map[string]*future{}, byOwner: map[string][]*future{}, pending: map[string]int{}, stop: make(chan struct{}), stopped: make(chan struct{})}
	go t.janitor(futureGrace / 3)
	return t
}

// close stops the janitor and waits for running work.
func (t *futureTable) close() {
	close(t.stop)
	<-t.stopped
	t.wg.Wait()
}

func (t *futureTable) janitor(every time.Duration) {
	defer close(t.stopped)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case now := <-tick.C:
			t.collect(now)
		}
	}
}

// collect frees futures collected more than futureGrace ago and finished
// ones older than futureMaxAge.
func (t *futureTable) collect(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for owner, list := range t.byOwner {
		keep := list[:0]
		for _, f := range list {
			if t.expired(f, now) {
				delete(t.m, f.id)
				continue
			}
			keep = append(keep, f)
		}
		clear(list[len(keep):]) // let freed futures be garbage collected
		if len(keep) == 0 {
			delete(t.byOwner, owner)
		} else {
			t.byOwner[owner] = keep
		}
	}
}

func (t *futureTable) expired(f *future, now time.Time) bool {
	if !f.collectedAt.IsZero() {
		return now.Sub(f.collectedAt) > futureGrace
	}
	select {
	case <-f.done:
		return now.Sub(f.createdAt) > futureMaxAge
	default:
		return false // still running; Close waits for it
	}
}

// admit reserves one of owner's maxFuturesPerUser slots, or answers 429
// when they are all taken by futures not yet collected. Handlers call it
// before they change any state, so a refused request can simply be sent
// again, and defer the release it returns: the reservation holds the slot
// until startFuture has registered the future, so concurrent requests
// cannot all pass the check at once and overshoot the limit.
func (t *futureTable) admit(owner string) (release func(), e *errorResponse) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.pending[owner]
	for _, f := range t.byOwner[owner] {
		if f.collectedAt.IsZero() {
			n++
		}
	}
	if n >= maxFuturesPerUser {
		return nil, errorf(http.StatusTooManyRequests, "Too many outstanding requests: %d results not yet collected (the limit is %d per user); collect them with retrieve_future, then retry", n, maxFuturesPerUser)
	}
	t.pending[owner]++
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.pending[owner]--; t.pending[owner] <= 0 {
				delete(t.pending, owner)
			}
		})
	}, nil
}

// newFutureID is 128 random bits: ids cannot be guessed from run ids or
// counters, so a future's id is no key to another user's result.
func newFutureID() string {
	var b [16]byte
	rand.Read(b[:])
	return "fut-" + hex.EncodeToString(b[:])
}

// startFuture registers a future of owner and runs work in the background.
// work returns the JSON result, an optional protobuf form, or an error whose
// category comes from userError. Call futures.admit first.
func (s *Server) startFuture(owner string, work func() (json []byte, proto []byte, err error)) *future {
	return s.startFutureWith(owner, futureOpts{}, work)
}

// startFutureOf is startFuture for one of model's ordered operations,
// whose result a clean restart keeps (futurekeep.go).
func (s *Server) startFutureOf(owner, model string, work func() (json []byte, proto []byte, err error)) *future {
	return s.startFutureWith(owner, futureOpts{model: model}, work)
}

// futureOpts says whose work a future does.
type futureOpts struct {
	model   string             // see future.model
	session string             // the session whose workContext the work took
	cancel  context.CancelFunc // stops this future's work alone, or nil
}

// startFutureWith is startFuture with its options. A future whose client
// goes away is abandoned: its session's work (or, outside a session, its
// own) is cancelled.
func (s *Server) startFutureWith(owner string, o futureOpts, work func() (json []byte, proto []byte, err error)) *future {
	t := s.futures
	now := time.Now()
	f := &future{id: newFutureID(), owner: owner, readyAt: now.Add(s.opts.FutureDelay), createdAt: now, done: make(chan struct{}),
		model: o.model, session: o.session, cancel: o.cancel}
	t.mu.Lock()
	t.m[f.id] = f
	t.byOwner[owner] = append(t.byOwner[owner], f)
	t.mu.Unlock()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		res, pb, err := s.runWork(work)
		if err == nil && len(res) == 0 && len(pb) == 0 {
			err = errors.New("internal error: the result could not be encoded; see the server log")
			s.opts.Logf("a future's work returned no result")
		}
		if err != nil {
			cat := "server"
			var ue userError
			if errors.As(err, &ue) {
				cat = "user"
			}
			f.failure, _ = json.Marshal(map[string]string{"error": s.scrub(err.Error()), "category": cat})
			f.halted = errors.Is(err, errHalted)
		} else {
			f.result, f.proto = res, pb
		}
		if o.cancel != nil {
			o.cancel()
		}
		close(f.done)
	}()
	return f
}

// runWork runs a future's work; a panic in it is a bug, logged with its
// stack and reported as a server failure instead of ending the process.
func (s *Server) runWork(work func() ([]byte, []byte, error)) (res, pb []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			s.opts.Logf("panic in a future: %v\n%s", v, debug.Stack())
			res, pb, err = nil, nil, errors.New("internal error: see the server log")
		}
	}()
	return work()
}

// lookup finds owner's future id; another user's future is as unknown as
// one that never existed.
func (t *futureTable) lookup(owner, id string) *future {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.m[id]
	if f == nil || f.owner != owner {
		return nil
	}
	return f
}

// busyQueue is how many unfinished earlier requests make a poll report
// paused_capacity instead of active.
const busyQueue = 8

// pendingBefore counts the owner's futures submitted before f whose results
// are not yet deliverable. The scan is bounded by maxFuturesPerUser.
func (t *futureTable) pendingBefore(f *future) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	n := 0
	for _, o := range t.byOwner[f.owner] {
		if o == f {
			break
		}
		select {
		case <-o.done:
			if now.Before(o.readyAt) {
				n++
			}
		default:
			n++
		}
	}
	return n
}

type userError struct{ msg string }

func (e userError) Error() string { return e.msg }

func userErrorf(format string, args ...any) error { return userError{fmt.Sprintf(format, args...)} }

// futureRequest is the body of retrieve_future and cancel_future.
type futureRequest struct {
	RequestID         string `json:"request_id"`
	AllowMetadataOnly bool   `json:"allow_metadata_only"`
}

// futureOf decodes body and finds the caller's future it names.
func (s *Server) futureOf(r *http.Request, owner string, body *futureRequest) (*future, *errorResponse) {
	if e := decodeBody(r, body); e != nil {
		return nil, e
	}
	if len(body.RequestID) > maxIDLen {
		return nil, errorf(http.StatusBadRequest, "request_id is longer than %d bytes", maxIDLen)
	}
	f := s.futures.lookup(owner, body.RequestID)
	if f == nil {
		// Futures live in memory: after a restart, once collected, or an
		// hour unclaimed the promise is gone, and 410 tells clients to
		// resubmit. Another user's future answers exactly the same.
		return nil, errorf(http.StatusGone, "Future %q expired or unknown; resubmit the request", body.RequestID)
	}
	return f, nil
}

func (s *Server) retrieveFuture(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	var body futureRequest
	f, e := s.futureOf(r, owner, &body)
	if e != nil {
		return e
	}
	s.futures.pollBegin(f)
	defer s.pollEnd(f)
	hold := time.NewTimer(s.opts.PollHold)
	defer hold.Stop()
	wait := func(ch <-chan time.Time) bool {
		select {
		case <-ch:
			return true
		case <-hold.C:
			return false
		case <-r.Context().Done():
			return false
		}
	}
	ready := true
	select {
	case <-f.done:
	default:
		ready = false
		select {
		case <-f.done:
			ready = true
		case <-hold.C:
		case <-r.Context().Done():
		}
	}
	if ready {
		if d := time.Until(f.readyAt); d > 0 {
			ready = wait(time.After(d))
		}
	}
	if !ready {
		out := map[string]string{"type": "try_again", "request_id": f.id, "queue_state": "active"}
		if ahead := s.futures.pendingBefore(f); ahead >= busyQueue {
			out["queue_state"] = "paused_capacity"
			out["queue_state_reason"] = fmt.Sprintf("waiting for capacity: %d requests ahead", ahead)
		}
		writeJSON(w, 200, out)
		return nil
	}
	if f.halted { // set before done closed; a client resubmits on 410 (trainstop.go)
		return errorf(http.StatusGone, "%s", errHalted.msg)
	}
	if f.failure != nil {
		s.futures.markCollected(f)
		writeRaw(w, 200, f.failure)
		return nil
	}
	wantProto := f.proto != nil && strings.Contains(r.Header.Get("Accept"), "application/x-protobuf")
	payload := f.result
	if wantProto {
		payload = f.proto
	}
	s.futures.mu.Lock()
	sendMeta := body.AllowMetadataOnly && !f.sentMeta && len(payload) > 1<<20
	if sendMeta {
		f.sentMeta = true
	} else if f.collectedAt.IsZero() {
		f.collectedAt = time.Now()
	}
	s.futures.mu.Unlock()
	if sendMeta {
		writeJSON(w, 200, map[string]any{"status": "complete_metadata", "response_payload_size": len(payload)})
		return nil
	}
	if wantProto {
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
		w.WriteHeader(200)
		w.Write(payload)
		return nil
	}
	writeRaw(w, 200, payload)
	return nil
}

func writeFuture(w http.ResponseWriter, f *future, modelID string) {
	out := map[string]string{"request_id": f.id}
	if modelID != "" {
		out["model_id"] = modelID
	}
	writeJSON(w, 200, out)
}

// markCollected starts f's grace period: its final answer has been sent.
func (t *futureTable) markCollected(f *future) {
	t.mu.Lock()
	if f.collectedAt.IsZero() {
		f.collectedAt = time.Now()
	}
	t.mu.Unlock()
}

// defaultAbandonGrace is how long a running future outside any session
// waits for its next poll once a poll ended before its work is cancelled
// (Options.AbandonGrace): longer than any client's backoff between polls
// (the SDK's grows to 30 s). A future of a session is never abandoned for
// a gap between polls: the session's heartbeat says its client is alive,
// and its work stops when the heartbeats stop (reapSessions) or its client
// cancels it (cancelFuture). A future nobody polled yet is not abandoned
// either: clients submit several operations and wait for them in turn.
const defaultAbandonGrace = 60 * time.Second

func (t *futureTable) pollBegin(f *future) {
	t.mu.Lock()
	f.polling++
	t.mu.Unlock()
}

// pollEnd ends a poll of f. If f has no session and nobody polls it again
// within AbandonGrace while its work still runs, the work is cancelled.
func (s *Server) pollEnd(f *future) {
	t := s.futures
	t.mu.Lock()
	defer t.mu.Unlock()
	f.polling--
	switch {
	case f.finished() || f.session != "":
	case f.abandon == nil:
		f.abandon = time.AfterFunc(s.opts.AbandonGrace, func() { s.abandonIfIdle(f) })
	default:
		f.abandon.Reset(s.opts.AbandonGrace)
	}
}

func (f *future) finished() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// abandonIfIdle cancels f's work unless a poll of it is waiting now or
// it has finished.
func (s *Server) abandonIfIdle(f *future) {
	t := s.futures
	t.mu.Lock()
	idle := f.polling == 0
	t.mu.Unlock()
	if idle && f.cancel != nil && !f.finished() {
		f.cancel()
	}
}

// cancelFuture is tinker serve's own endpoint (offered as
// tinker_cancel_future in client/config, so only clients that know it
// send it): the caller stopped waiting for a future (Ctrl-C), so its work
// stops now. For a future of a session that is the session's work
// generation (sessions.go): what was submitted on it until now and has
// not finished, so a pipelined optim_step does not run without its
// forward_backward. The session itself stays usable.
func (s *Server) cancelFuture(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	f, e := s.futureOf(r, owner, &futureRequest{})
	if e != nil {
		return e
	}
	running := !f.finished()
	switch {
	case !running:
	case f.session != "":
		s.cancelWork(f.session, "its client cancelled "+f.id)
	case f.cancel != nil:
		f.cancel()
	}
	writeJSON(w, 200, map[string]bool{"cancelled": running})
	return nil
}
