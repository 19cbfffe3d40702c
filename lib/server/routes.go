package server

import (
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/tinkershell/tinker/lib/models"
)

type handlerFunc func(w http.ResponseWriter, r *http.Request, owner string, seg []string) *errorResponse

// route matches a method and a path pattern over the segments after
// /api/v1/; "*" matches one (percent-decoded) segment. Checkpoint ids are two
// segments (kind/name), so they appear as "*", "*" in patterns.
type route struct {
	method  string
	pattern []string
	h       handlerFunc
	noAuth  bool
}

func (s *Server) routes() http.Handler {
	p := func(s string) []string { return strings.Split(s, "/") }
	ck := "training_runs/*/checkpoints/*/*"
	table := []route{
		{"GET", p("healthz"), s.healthz, true},
		{"GET", p("get_server_capabilities"), s.capabilities, false},
		{"POST", p("client/config"), s.clientConfig, false},
		{"POST", p("client/dynamic_config"), s.dynamicConfig, false},
		{"POST", p("auth/token"), s.authToken, false},
		{"POST", p("telemetry"), s.telemetry, false},
		{"GET", p("training_runs"), s.listRuns, false},
		{"GET", p("training_runs/*"), s.getRun, false},
		{"GET", p("training_runs/*/checkpoints"), s.runCheckpoints, false},
		{"DELETE", p(ck), s.deleteCkpt, false},
		{"GET", p(ck + "/archive"), s.archive, false},
		{"POST", p(ck + "/publish"), s.publish, false},
		{"DELETE", p(ck + "/publish"), s.unpublish, false},
		{"PUT", p(ck + "/ttl"), s.setTTL, false},
		{"GET", p("checkpoints"), s.listCheckpoints, false},
		{"POST", p("weights_info"), s.weightsInfo, false},
		{"GET", p("sessions"), s.listSessions, false},
		{"GET", p("sessions/*"), s.getSession, false},
		{"PUT", p("sessions/*/project"), s.setProject, false},
		{"GET", p("sessions/*/trace_export"), s.traceExport, false},
		{"GET", p("samplers/*"), s.getSampler, false},
		{"GET", p("billing/usage/events"), s.billingUsage, false},
		{"GET", p("audit"), s.audit, false},
		{"POST", p("create_session"), s.createSession, false},
		{"POST", p("session_heartbeat"), s.heartbeat, false},
		{"POST", p("create_model"), s.createModel, false},
		{"POST", p("get_info"), s.getInfo, false},
		{"POST", p("save_weights"), s.saveWeights, false},
		{"POST", p("save_weights_for_sampler"), s.saveWeightsForSampler, false},
		{"POST", p("create_sampling_session"), s.createSamplingSession, false},
		{"POST", p("asample"), s.asample, false},
		{"POST", p("retrieve_future"), s.retrieveFuture, false},
		{"POST", p("cancel_future"), s.cancelFuture, false},
		{"POST", p("load_weights"), s.loadWeights, false},
		{"POST", p("forward_backward"), s.forwardBackward, false},
		{"POST", p("forward"), s.forward, false},
		{"POST", p("optim_step"), s.optimStep, false},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		path := r.URL.EscapedPath()
		if rest, ok := strings.CutPrefix(path, "/files/"); ok {
			status := s.serveFile(w, r, rest)
			s.logHTTP(r, "/files/…", status, start)
			return
		}
		if !strings.HasPrefix(path, "/api/v1/") && hubPath(path) {
			status := s.serveHub(w, r, path)
			s.logHTTP(r, path, status, start)
			return
		}
		// Every body is bounded here; decodeBody bounds JSON bodies further.
		r.Body = http.MaxBytesReader(w, r.Body, maxTrainingBodyBytes)
		rec := &recorder{ResponseWriter: w, status: 200}
		defer func() {
			// A handler panic is a bug: log it with its stack and answer
			// 500 rather than dropping the connection.
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.opts.Logf("panic in %s %s: %v\n%s", r.Method, path, v, debug.Stack())
				if !rec.wrote {
					writeError(rec, errorf(http.StatusInternalServerError, "internal error: see the server log"))
				}
				s.logHTTP(r, path, rec.status, start)
			}
		}()
		e := s.dispatch(rec, r, path, table)
		if e != nil {
			e.detail = s.scrub(e.detail)
			writeError(rec, e)
		}
		s.logHTTP(r, path, rec.status, start)
	})
}

func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, path string, table []route) *errorResponse {
	rest, ok := strings.CutPrefix(path, "/api/v1/")
	if !ok {
		return errorf(http.StatusNotFound, "Not Found")
	}
	// Decode before splitting: run ids and checkpoint names never contain
	// "/", so a client that percent-encodes the checkpoint id's slash
	// (weights%2F0001) or a run id's colons still routes correctly.
	dec, err := url.PathUnescape(strings.TrimSuffix(rest, "/"))
	if err != nil {
		return errorf(http.StatusBadRequest, "Invalid percent-encoding in path %q", path)
	}
	seg := strings.Split(dec, "/")
	pathMatched := false
	for _, rt := range table {
		if !match(rt.pattern, seg) {
			continue
		}
		pathMatched = true
		if rt.method != r.Method {
			continue
		}
		owner := ""
		if !rt.noAuth {
			var e *errorResponse
			if owner, e = s.authenticate(r); e != nil {
				return e
			}
		}
		return s.idempotent(w, r, owner, func(w http.ResponseWriter) *errorResponse { return rt.h(w, r, owner, seg) })
	}
	if pathMatched {
		return errorf(http.StatusMethodNotAllowed, "Method Not Allowed")
	}
	return errorf(http.StatusNotFound, "Not Found")
}

func match(pattern, seg []string) bool {
	if len(pattern) != len(seg) {
		return false
	}
	for i, p := range pattern {
		if p == "*" {
			if seg[i] == "" {
				return false
			}
		} else if p != seg[i] {
			return false
		}
	}
	return true
}

type recorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	r.status, r.wrote = code, true
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// ---- bootstrap ------------------------------------------------------------

func (s *Server) healthz(w http.ResponseWriter, r *http.Request, _ string, _ []string) *errorResponse {
	writeRaw(w, 200, []byte(`{"status":"ok"}`))
	return nil
}

func (s *Server) capabilities(w http.ResponseWriter, r *http.Request, _ string, _ []string) *errorResponse {
	type m struct {
		ModelName        string `json:"model_name"`
		MaxContextLength int    `json:"max_context_length"`
		TokenizerID      string `json:"tokenizer_id,omitempty"` // the tiny models' resolve on this server (hub.go)
		// The whole catalog is listed; servable marks the models whose
		// weights this server has now, and unavailable says how to
		// provide the others' (a field clients that do not know it skip).
		Servable    bool   `json:"servable"`
		Unavailable string `json:"unavailable,omitempty"`
	}
	var out []m
	for _, a := range models.All() {
		e := m{ModelName: a.Name, MaxContextLength: a.MaxPositionEmbeddings, TokenizerID: a.TokenizerID, Servable: true}
		if err := s.servable(a.Name); err != nil {
			e.Servable, e.Unavailable = false, err.Error()
		}
		out = append(out, e)
	}
	writeJSON(w, 200, map[string]any{"supported_models": out})
	return nil
}

func (s *Server) clientConfig(w http.ResponseWriter, r *http.Request, _ string, _ []string) *errorResponse {
	// With the JWT exchange off clients keep sending the raw key (jwt.go).
	// Training bodies may come zstd-compressed (zstdbody.go), as the SDK
	// sends them when offered; tinker's client cancels the futures it stops
	// waiting for (cancelFuture), other clients ignore the key.
	writeJSON(w, 200, map[string]any{"pjwt_auth_enabled": s.opts.JWT, "credential_default_source": "api_key",
		"proto_compress_fwdbwd": true, "tinker_cancel_future": true})
	return nil
}

func (s *Server) dynamicConfig(w http.ResponseWriter, r *http.Request, _ string, _ []string) *errorResponse {
	writeRaw(w, 200, []byte(`{"refresh_interval_sec":300}`))
	return nil
}

func (s *Server) telemetry(w http.ResponseWriter, r *http.Request, _ string, _ []string) *errorResponse {
	var body map[string]any
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	writeRaw(w, 200, []byte(`{"status":"accepted"}`))
	return nil
}

func (s *Server) audit(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	ev := r.URL.Query().Get("event_type")
	if ev != "" && ev != "all" && ev != "checkpoints" {
		return errorf(http.StatusBadRequest, "event_type must be all or checkpoints")
	}
	var day time.Time
	if d := r.URL.Query().Get("day"); d != "" {
		var err error
		if day, err = time.Parse("2006-01-02", d); err != nil {
			return errorf(http.StatusBadRequest, "day must be YYYY-MM-DD")
		}
	}
	type entry struct {
		Timestamp  ts     `json:"timestamp"`
		Event      string `json:"event"`
		ModelID    string `json:"model_id,omitempty"`
		TinkerPath string `json:"tinker_path,omitempty"`
	}
	entries := []entry{}
	for _, c := range s.st.OwnerCheckpoints(owner) {
		if !day.IsZero() && (c.Time.Before(day) || !c.Time.Before(day.Add(24*time.Hour))) {
			continue
		}
		entries = append(entries, entry{ts(c.Time), "checkpoint_created", c.RunID, c.TinkerPath()})
	}
	writeJSON(w, 200, map[string]any{"entries": entries})
	return nil
}
