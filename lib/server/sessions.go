package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tinkershell/tinker/lib/store"
)

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, owner string, _ []string) *apiError {
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

func (s *Server) ownedSession(owner, id string) (store.Session, []string, []string, *apiError) {
	se, runs, samplers, ok := s.st.Session(id)
	if !ok || se.Owner != owner {
		return se, nil, nil, errorf(http.StatusNotFound, "Session %s not found", id)
	}
	return se, runs, samplers, nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request, owner string, seg []string) *apiError {
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

func (s *Server) setProject(w http.ResponseWriter, r *http.Request, owner string, seg []string) *apiError {
	var body struct {
		ProjectID *string `json:"project_id"`
	}
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	if body.ProjectID == nil || *body.ProjectID == "" {
		return errorf(http.StatusBadRequest, "project_id is required; a session cannot be removed from its project")
	}
	if _, _, _, e := s.ownedSession(owner, seg[1]); e != nil {
		return e
	}
	if err := s.st.SetSessionProject(seg[1], *body.ProjectID); err != nil {
		return errorf(http.StatusInternalServerError, "%v", err)
	}
	writeRaw(w, 200, []byte(`{}`))
	return nil
}

func (s *Server) getSampler(w http.ResponseWriter, r *http.Request, owner string, seg []string) *apiError {
	sp, ok := s.st.Sampler(seg[1])
	if !ok || sp.Owner != owner {
		return errorf(http.StatusNotFound, "Sampler %s not found", seg[1])
	}
	out := map[string]any{"sampler_id": sp.ID, "base_model": sp.BaseModel}
	if sp.ModelPath != "" {
		out["model_path"] = sp.ModelPath
	}
	writeJSON(w, 200, out)
	return nil
}

// ---- trace export ---------------------------------------------------------

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

func (s *Server) traceExport(w http.ResponseWriter, r *http.Request, owner string, seg []string) *apiError {
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
	tmp := p + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("create trace: %w", err)
	}
	bw := bufio.NewWriter(f)
	enc := json.NewEncoder(bw)
	err = enc.Encode(map[string]any{"traceEvents": events, "displayTimeUnit": "ms"})
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write trace: %w", err)
	}
	return os.Rename(tmp, p)
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

// ---- billing --------------------------------------------------------------

// parseBillingTime accepts RFC 3339 and, like the service, zone-less
// date-times (taken as UTC), which the official CLI sends for date-only input.
func parseBillingTime(name, v string) (time.Time, *apiError) {
	if v == "" {
		return time.Time{}, errorf(http.StatusUnprocessableEntity, "%s is required", name)
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04:05.999999"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errorf(http.StatusBadRequest, "%s must be an RFC 3339 date-time, got %q", name, v)
}

type billingEvent struct {
	BucketStart ts      `json:"bucket_start"`
	BucketEnd   ts      `json:"bucket_end"`
	BaseModel   *string `json:"base_model"`
	UserID      *string `json:"user_id"`
	UserName    *string `json:"user_name"`
	SessionID   *string `json:"session_id"`
	ProjectID   *string `json:"project_id"`
}

func (s *Server) billingUsage(w http.ResponseWriter, r *http.Request, owner string, _ []string) *apiError {
	q := r.URL.Query()
	from, e := parseBillingTime("starting_on", q.Get("starting_on"))
	if e != nil {
		return e
	}
	to, e := parseBillingTime("ending_before", q.Get("ending_before"))
	if e != nil {
		return e
	}
	if !from.Equal(from.Truncate(time.Hour)) || !to.Equal(to.Truncate(time.Hour)) {
		return errorf(http.StatusBadRequest, "starting_on and ending_before must be aligned to the hour (e.g. 2026-07-13T05:00:00Z)")
	}
	if !to.After(from) {
		return errorf(http.StatusBadRequest, "ending_before must be after starting_on")
	}
	if to.Sub(from) > 14*24*time.Hour {
		return errorf(http.StatusBadRequest, "the window may span at most 14 days")
	}
	usage, err := s.st.Usage(owner, from, to)
	if err != nil {
		return errorf(http.StatusInternalServerError, "%v", err)
	}
	type key struct {
		bucket              time.Time
		session, base, kind string
		cached              bool
	}
	type agg struct {
		tokens, count int64
		gbh           float64
	}
	sums := map[key]*agg{}
	get := func(k key) *agg {
		a := sums[k]
		if a == nil {
			a = &agg{}
			sums[k] = a
		}
		return a
	}
	for _, u := range usage {
		get(key{u.At.Truncate(time.Hour), u.SessionID, u.BaseModel, u.Type, u.Cached}).tokens += u.TokenCount
	}
	runs := map[string]store.RunView{}
	now := s.now()
	for _, c := range s.st.OwnerCheckpoints(owner) {
		rv, ok := runs[c.RunID]
		if !ok {
			rv, _ = s.st.Run(c.RunID, now)
			runs[c.RunID] = rv
		}
		if !c.Time.Before(from) && c.Time.Before(to) {
			get(key{c.Time.Truncate(time.Hour), rv.SessionID, rv.BaseModel, "checkpoint", false}).count++
		}
		// Storage: bytes held during each hour of the window, up to now.
		end := now
		if c.ExpiresAt != nil && c.ExpiresAt.Before(end) {
			end = *c.ExpiresAt
		}
		for b := from; b.Before(to); b = b.Add(time.Hour) {
			lo, hi := maxTime(b, c.Time), minTime(b.Add(time.Hour), end)
			if hi.After(lo) {
				get(key{b, rv.SessionID, rv.BaseModel, "storage", false}).gbh += float64(c.SizeBytes) / 1e9 * hi.Sub(lo).Hours()
			}
		}
	}
	keys := make([]key, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	order := map[string]int{"training": 0, "sampling_prefill": 1, "sampling_sample": 2, "checkpoint": 3, "storage": 4}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if !a.bucket.Equal(b.bucket) {
			return a.bucket.Before(b.bucket)
		}
		if a.session != b.session {
			return a.session < b.session
		}
		if a.base != b.base {
			return a.base < b.base
		}
		if a.kind != b.kind {
			return order[a.kind] < order[b.kind]
		}
		return !a.cached && b.cached
	})
	var sb strings.Builder
	sb.WriteString(`{"data":[`)
	sessions := map[string]any{}
	ownerCopy := owner
	for i, k := range keys {
		a := sums[k]
		var info string
		switch k.kind {
		case "training", "sampling_sample":
			info = fmt.Sprintf(`{"type":%q,"token_count":%d}`, k.kind, a.tokens)
		case "sampling_prefill":
			info = fmt.Sprintf(`{"type":"sampling_prefill","cached":%t,"token_count":%d}`, k.cached, a.tokens)
		case "checkpoint":
			info = fmt.Sprintf(`{"type":"checkpoint","count":%d}`, a.count)
		case "storage":
			gb, _ := json.Marshal(a.gbh)
			info = `{"type":"storage","gigabyte_hours":` + string(gb) + `}`
		}
		ev := billingEvent{BucketStart: ts(k.bucket), BucketEnd: ts(k.bucket.Add(time.Hour)), UserID: &ownerCopy}
		if k.base != "" {
			base := k.base
			ev.BaseModel = &base
		}
		if k.session != "" {
			sid := k.session
			ev.SessionID = &sid
			se, _, _, ok := s.st.Session(sid)
			if ok && se.ProjectID != "" {
				p := se.ProjectID
				ev.ProjectID = &p
			}
			if ok {
				if se.UserMetadata != nil {
					sessions[sid] = map[string]any{"user_metadata": se.UserMetadata}
				} else {
					sessions[sid] = map[string]any{"user_metadata": nil}
				}
			}
		}
		b, _ := json.Marshal(ev)
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.Write(b[:len(b)-1])
		sb.WriteString(`,"event_info":`)
		sb.WriteString(info)
		sb.WriteByte('}')
	}
	sj, _ := json.Marshal(sessions)
	sb.WriteString(`],"sessions":`)
	sb.Write(sj)
	sb.WriteByte('}')
	writeRaw(w, 200, []byte(sb.String()))
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
