// Package partialtest is a loopback server with the partial Tinker API
// surface other backends implement (modelled on SkyRL tx's): health,
// capabilities, sessions and heartbeats, create_model and get_info,
// futures numbered with integers that retrieve_future answers with the
// result itself, runs owned by "default" and checkpoint listings without a
// cursor. It has no client/config, session listing, billing or trace
// export: those routes answer FastAPI's 404 "Not Found", and a known path
// with another method 405. Tests point the real client (and tinker doctor)
// at it.
package partialtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Server is the stub. Requests records "METHOD /path" of every request.
type Server struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests []string
	futures  map[int64]any
	models   map[string]string // model id -> base model
	next     int64
}

// BaseModel is the one model the stub serves.
const BaseModel = "Qwen/Qwen3-0.6B"

// New starts a stub; Close stops it.
func New() *Server {
	s := &Server{futures: map[int64]any{}, models: map[string]string{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the base URL to give the client.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Requests returns the requests so far.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

type handler func(s *Server, body map[string]any) (int, any)

// routes are the offered endpoints by path, then method.
var routes = map[string]map[string]handler{
	"healthz":                 {"GET": func(*Server, map[string]any) (int, any) { return 200, map[string]string{"status": "ok"} }},
	"get_server_capabilities": {"GET": func(*Server, map[string]any) (int, any) { return 200, caps }},
	"create_session":          {"POST": (*Server).createSession},
	"session_heartbeat":       {"POST": func(*Server, map[string]any) (int, any) { return 200, map[string]string{"type": "session_heartbeat"} }},
	"telemetry":               {"POST": func(*Server, map[string]any) (int, any) { return 200, map[string]string{"status": "accepted"} }},
	"create_model":            {"POST": (*Server).createModel},
	"retrieve_future":         {"POST": (*Server).retrieve},
	"get_info":                {"POST": (*Server).getInfo},
	"training_runs":           {"GET": (*Server).runs},
}

var caps = map[string]any{"supported_models": []map[string]string{{"model_name": BaseModel}}}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	path := strings.TrimPrefix(r.URL.Path, "/api/v1/")
	var body map[string]any
	if b, _ := io.ReadAll(r.Body); len(b) > 0 {
		if err := json.Unmarshal(b, &body); err != nil {
			reply(w, 422, map[string]string{"detail": err.Error()})
			return
		}
	}
	byMethod := routes[path]
	if strings.HasPrefix(path, "training_runs/") && strings.HasSuffix(path, "/checkpoints") {
		byMethod = map[string]handler{"GET": func(*Server, map[string]any) (int, any) { return 200, checkpoints(path) }}
	}
	if byMethod == nil {
		reply(w, 404, map[string]string{"detail": "Not Found"})
		return
	}
	h := byMethod[r.Method]
	if h == nil {
		reply(w, 405, map[string]string{"detail": "Method Not Allowed"})
		return
	}
	s.mu.Lock()
	code, out := h(s, body)
	s.mu.Unlock()
	reply(w, code, out)
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (s *Server) createSession(map[string]any) (int, any) {
	s.next++
	return 200, map[string]any{"type": "create_session", "session_id": fmt.Sprintf("session_%08x", s.next)}
}

// createModel answers with an integer request id, as SkyRL tx numbers its futures.
func (s *Server) createModel(body map[string]any) (int, any) {
	base, _ := body["base_model"].(string)
	if base != BaseModel {
		return 400, map[string]string{"detail": "unsupported base model " + base}
	}
	s.next++
	id, req := fmt.Sprintf("model_%08x", s.next), s.next
	s.models[id] = base
	s.futures[req] = map[string]any{"model_id": id, "base_model": base}
	return 200, map[string]any{"model_id": id, "base_model": base, "status": "created", "request_id": req}
}

// retrieve wants the request id as the number it handed out.
func (s *Server) retrieve(body map[string]any) (int, any) {
	n, ok := body["request_id"].(float64)
	if !ok {
		return 422, map[string]string{"detail": fmt.Sprintf("request_id: Input should be a valid integer, got %v", body["request_id"])}
	}
	res, ok := s.futures[int64(n)]
	if !ok {
		return 404, map[string]string{"detail": "Future not found"}
	}
	return 200, res
}

func (s *Server) getInfo(body map[string]any) (int, any) {
	id, _ := body["model_id"].(string)
	base, ok := s.models[id]
	if !ok {
		return 404, map[string]string{"detail": "Model not found"}
	}
	return 200, map[string]any{"model_id": id, "status": "ready",
		"model_data": map[string]any{"base_model": base, "lora_config": map[string]int{"rank": 32}, "model_name": base}}
}

// runs lists the models as training runs: model_owner "default", no
// checkpoints or metadata.
func (s *Server) runs(map[string]any) (int, any) {
	list := []map[string]any{}
	for id, base := range s.models {
		list = append(list, map[string]any{"training_run_id": id, "base_model": base, "model_owner": "default",
			"is_lora": true, "corrupted": false, "lora_rank": 32, "last_request_time": "2026-01-02T03:04:05Z",
			"last_checkpoint": nil, "last_sampler_checkpoint": nil, "user_metadata": nil})
	}
	return 200, map[string]any{"training_runs": list, "cursor": map[string]int{"offset": 0, "limit": 20, "total_count": len(list)}}
}

// checkpoints lists one training checkpoint, with no cursor and none of
// the optional fields.
func checkpoints(path string) map[string]any {
	run := strings.TrimSuffix(strings.TrimPrefix(path, "training_runs/"), "/checkpoints")
	return map[string]any{"checkpoints": []map[string]any{{"checkpoint_id": "weights/ckpt1", "checkpoint_type": "training",
		"time": "2026-01-02T03:04:05Z", "tinker_path": "tinker://" + run + "/weights/ckpt1"}}}
}
