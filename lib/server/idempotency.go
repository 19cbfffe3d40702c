package server

import (
	"bytes"
	"net/http"
	"sync"
	"time"
)

// Idempotent retries. The SDK sends every POST with an X-Idempotency-Key
// and keeps the key across the retries of one call; when an answer is
// lost after the server did the work (a connection dropped on the way
// back), the retry carries the same key. Replaying the first answer makes
// that retry harmless: create_model gets the same model, a submission the
// same future, instead of a second model or a refusal of a used seq_id.
// Only successful answers are kept (a retry after an error does the work
// again), per user, for idemTTL, at most idemPerUser keys a user.

const (
	idemTTL      = 10 * time.Minute
	idemPerUser  = 4096
	idemTotal    = 65536   // over all users (any tml- key is a user without --api-key)
	maxIdemKey   = 128     // longer keys are not remembered
	maxIdemReply = 4 << 10 // answers kept are small: handles and ids
)

// idemEndpoint says whether path is one of the calls whose repeat must not do the work twice:
// those that create something or submit an operation. Polls, heartbeats
// and reads are harmless to repeat and are not remembered.
func idemEndpoint(path string) bool {
	switch path {
	case "/api/v1/create_session", "/api/v1/create_model", "/api/v1/create_sampling_session",
		"/api/v1/asample", "/api/v1/forward_backward", "/api/v1/forward", "/api/v1/optim_step",
		"/api/v1/save_weights", "/api/v1/save_weights_for_sampler", "/api/v1/load_weights":
		return true
	}
	return false
}

type idemEntry struct {
	done   chan struct{} // closed once the first request answered
	status int
	ctype  string
	body   []byte
	at     time.Time
	ok     bool // a 2xx to replay; otherwise the entry is dropped
}

type idemTable struct {
	mu sync.Mutex
	m  map[string]map[string]*idemEntry // owner → key+path → entry
	n  int                              // entries in m
}

// idempotent runs h once per (owner, key, path): a repeat of a request
// whose first try succeeded gets the first answer again; a repeat while
// the first is still running waits for it.
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, owner string, h func(http.ResponseWriter) *errorResponse) *errorResponse {
	key := r.Header.Get("X-Idempotency-Key")
	if r.Method != http.MethodPost || key == "" || len(key) > maxIdemKey || !idemEndpoint(r.URL.EscapedPath()) {
		return h(w)
	}
	id := key + " " + r.URL.EscapedPath()
	e, first := s.idem.claim(owner, id)
	if !first {
		select {
		case <-e.done:
		case <-r.Context().Done():
			return errorf(http.StatusRequestTimeout, "the first request with this idempotency key is still running; retry")
		}
		if e.ok {
			w.Header().Set("Content-Type", e.ctype)
			w.WriteHeader(e.status)
			w.Write(e.body)
			return nil
		}
		return h(w) // the first failed: this one tries again
	}
	rec := &replyRecorder{ResponseWriter: w, status: 200}
	var err *errorResponse
	defer func() { // also when h panics: repeats must not wait forever
		if err != nil || !rec.written {
			rec = nil
		}
		s.idem.finish(owner, id, e, rec)
	}()
	err = h(rec)
	return err
}

// claim returns the entry for id, creating it (first) when there is none
// or the one there expired.
func (t *idemTable) claim(owner, id string) (*idemEntry, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]map[string]*idemEntry{}
	}
	m := t.m[owner]
	if m == nil {
		m = map[string]*idemEntry{}
		t.m[owner] = m
	}
	now := time.Now()
	if e := m[id]; e != nil && now.Sub(e.at) < idemTTL {
		return e, false
	}
	if len(m) >= idemPerUser || t.n >= idemTotal {
		t.expire(now)
	}
	e := &idemEntry{done: make(chan struct{}), at: now}
	if m[id] == nil && len(m) < idemPerUser && t.n < idemTotal {
		m[id] = e
		t.n++
	}
	return e, true
}

// expire drops the finished entries older than idemTTL, and users left
// with none.
func (t *idemTable) expire(now time.Time) {
	for owner, m := range t.m {
		for k, e := range m {
			if isClosed(e.done) && now.Sub(e.at) >= idemTTL {
				delete(m, k)
				t.n--
			}
		}
		if len(m) == 0 {
			delete(t.m, owner)
		}
	}
}

// finish records the first answer (rec nil: it failed) and wakes repeats.
func (t *idemTable) finish(owner, id string, e *idemEntry, rec *replyRecorder) {
	t.mu.Lock()
	if rec != nil && rec.status/100 == 2 && !rec.overflow {
		e.ok, e.status, e.ctype, e.body = true, rec.status, rec.Header().Get("Content-Type"), rec.buf.Bytes()
	} else if t.m[owner][id] == e {
		delete(t.m[owner], id)
		t.n--
	}
	t.mu.Unlock()
	close(e.done)
}

// replyRecorder passes an answer through and keeps a copy of it.
type replyRecorder struct {
	http.ResponseWriter
	status   int
	written  bool
	buf      bytes.Buffer
	overflow bool
}

func (r *replyRecorder) WriteHeader(code int) {
	r.status, r.written = code, true
	r.ResponseWriter.WriteHeader(code)
}

func (r *replyRecorder) Write(b []byte) (int, error) {
	if r.buf.Len()+len(b) > maxIdemReply {
		r.overflow = true
	} else {
		r.buf.Write(b)
	}
	return r.ResponseWriter.Write(b)
}
