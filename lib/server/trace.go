package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/store"
)

func (s *Server) logRequest(session, name string, start time.Time, status int, detail string) {
	if session == "" {
		return
	}
	if err := s.st.LogRequest(session, store.LoggedRequest{Name: name, Start: start, Dur: time.Since(start), Status: status, Detail: s.scrub(detail)}); err != nil {
		s.opts.Logf("log request: %v", err)
	}
}

// tracer builds Chrome-trace JSON files (which Perfetto opens) of a
// session's request log. The first poll starts the export and answers
// "pending"; later polls answer "ready" with a signed URL, like the service.
type tracer struct {
	s     *Server
	mu    sync.Mutex
	state map[string]*traceJob
	wg    sync.WaitGroup
}

type traceJob struct {
	done bool
	err  error
}

func newTracer(s *Server) *tracer { return &tracer{s: s, state: map[string]*traceJob{}} }

func (t *tracer) wait() { t.wg.Wait() }

func (t *tracer) path(session string) string {
	return filepath.Join(t.s.opts.DataDir, "traces", session+".json")
}

func (s *Server) traceExport(w http.ResponseWriter, r *http.Request, owner string, seg []string) *errorResponse {
	id := seg[1]
	if _, _, _, e := s.ownedSession(owner, id); e != nil {
		return e
	}
	t := s.traces
	t.mu.Lock()
	job := t.state[id]
	if job == nil || (job.done && job.err != nil) {
		job = &traceJob{}
		t.state[id] = job
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			err := t.build(id)
			t.mu.Lock()
			job.done, job.err = true, err
			t.mu.Unlock()
		}()
		t.mu.Unlock()
		writeJSON(w, 200, map[string]string{"status": "pending"})
		return nil
	}
	done, err := job.done, job.err
	if done {
		delete(t.state, id) // the next export starts afresh with newer requests
	}
	t.mu.Unlock()
	switch {
	case !done:
		writeJSON(w, 200, map[string]string{"status": "pending"})
	case err != nil:
		writeJSON(w, 200, map[string]string{"status": "failed", "error": err.Error()})
	default:
		u, _ := s.signedURL(r, []string{"t", id}, id+".pftrace")
		writeJSON(w, 200, map[string]string{"status": "ready", "url": u})
	}
	return nil
}

func (t *tracer) build(session string) error {
	reqs, err := t.s.st.SessionRequests(session)
	if err != nil {
		return err
	}
	se, _, _, _ := t.s.st.Session(session)
	type event struct {
		Name string         `json:"name"`
		Cat  string         `json:"cat"`
		Ph   string         `json:"ph"`
		Ts   int64          `json:"ts"`
		Dur  int64          `json:"dur,omitempty"`
		Pid  int            `json:"pid"`
		Tid  int            `json:"tid"`
		Args map[string]any `json:"args,omitempty"`
	}
	events := []event{
		{Name: "process_name", Ph: "M", Pid: 1, Args: map[string]any{"name": "tinker session " + session}},
		{Name: "thread_name", Ph: "M", Pid: 1, Tid: 1, Args: map[string]any{"name": "requests"}},
	}
	if !se.CreatedAt.IsZero() {
		events = append(events, event{Name: "session_start", Cat: "session", Ph: "i", Ts: se.CreatedAt.UnixMicro(), Pid: 1, Tid: 1})
	}
	for _, q := range reqs {
		args := map[string]any{"status": q.Status}
		if q.Detail != "" {
			args["detail"] = q.Detail
		}
		events = append(events, event{Name: q.Name, Cat: "request", Ph: "X", Ts: q.Start.UnixMicro(), Dur: max(q.Dur.Microseconds(), 1),
			Pid: 1, Tid: 1, Args: args})
	}
	p := t.path(session)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("create trace dir: %w", err)
	}
	err = atomicfile.Write(p, 0, func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		if err := json.NewEncoder(bw).Encode(map[string]any{"traceEvents": events, "displayTimeUnit": "ms"}); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	return nil
}

func (t *tracer) serve(w http.ResponseWriter, r *http.Request, session string) int {
	f, err := os.Open(t.path(session))
	if err != nil {
		writeError(w, errorf(http.StatusNotFound, "Trace not found: export it again"))
		return http.StatusNotFound
	}
	defer f.Close()
	st, _ := f.Stat()
	w.Header().Set("Content-Type", "application/json")
	rec := &recorder{ResponseWriter: w, status: 200}
	http.ServeContent(rec, r, "", st.ModTime(), f)
	return rec.status
}
