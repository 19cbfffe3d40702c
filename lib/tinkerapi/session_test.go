package tinkerapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/tinkerproto"
)

// svcReq is one request seen by svc, body decoded.
type svcReq struct {
	Path   string
	Header http.Header
	Body   map[string]any
	Raw    string
}

// svc is a small scripted Tinker service for session tests. Futures are
// complete at once; their request ids encode the result:
// "cm/<model id>", "sv/<tinker path>", "sa/<sampler>/<seq>".
type svc struct {
	srv      *httptest.Server
	mu       sync.Mutex
	reqs     []svcReq
	hbStatus atomic.Int32 // heartbeat answer status; 0 means 200
	// override, when set, may answer a request itself.
	override func(w http.ResponseWriter, r *http.Request, q svcReq, n int) bool
}

func newSvc(t *testing.T) *svc {
	t.Helper()
	s := &svc{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *svc) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	q := svcReq{Path: r.URL.Path, Header: r.Header.Clone(), Raw: string(raw)}
	json.Unmarshal(raw, &q.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, q)
	n := 0
	for _, x := range s.reqs {
		if x.Path == q.Path {
			n++
		}
	}
	ov := s.override
	s.mu.Unlock()
	if ov != nil && ov(w, r, q, n) {
		return
	}
	b := q.Body
	switch q.Path {
	case "/api/v1/client/config":
		writeJSON(w, 200, `{}`)
	case "/api/v1/create_session":
		writeJSON(w, 200, `{"session_id":"sess-1","type":"create_session","warning_message":"quota low"}`)
	case "/api/v1/session_heartbeat":
		if st := int(s.hbStatus.Load()); st != 0 {
			writeJSON(w, st, `{"detail":"heartbeat refused"}`)
			return
		}
		writeJSON(w, 200, `{"type":"session_heartbeat"}`)
	case "/api/v1/create_model":
		id := fmt.Sprintf("%v:train:%v", b["session_id"], b["model_seq_id"])
		writeJSON(w, 200, fmt.Sprintf(`{"request_id":"cm/%s","model_id":"%s"}`, id, id))
	case "/api/v1/save_weights", "/api/v1/save_weights_for_sampler":
		kind := strings.TrimPrefix(q.Path, "/api/v1/save_")
		kind = map[string]string{"weights": "weights", "weights_for_sampler": "sampler_weights"}[kind]
		writeJSON(w, 200, fmt.Sprintf(`{"request_id":"sv/tinker://%v/%s/%v"}`, b["model_id"], kind, b["path"]))
	case "/api/v1/create_sampling_session":
		writeJSON(w, 200, fmt.Sprintf(`{"sampling_session_id":"%v:sample:%v","type":"create_sampling_session"}`, b["session_id"], b["sampling_session_seq_id"]))
	case "/api/v1/asample":
		writeJSON(w, 200, fmt.Sprintf(`{"request_id":"sa/%v/%v"}`, b["sampling_session_id"], b["seq_id"]))
	case "/api/v1/get_info":
		writeJSON(w, 200, fmt.Sprintf(`{"model_id":"%v","model_data":{"arch":"llama","model_name":"m","tokenizer_id":"org/tok:rev"},"is_lora":true,"lora_rank":8,"type":"get_info"}`, b["model_id"]))
	case "/api/v1/retrieve_future":
		id, _ := b["request_id"].(string)
		kind, rest, _ := strings.Cut(id, "/")
		switch kind {
		case "cm":
			writeJSON(w, 200, fmt.Sprintf(`{"model_id":"%s","type":"create_model"}`, rest))
		case "sv":
			writeJSON(w, 200, fmt.Sprintf(`{"path":"%s"}`, rest))
		case "sa":
			// One sequence whose single token is the request's seq_id.
			var seq int
			fmt.Sscan(rest[strings.LastIndex(rest, "/")+1:], &seq)
			m := &tinkerproto.SampleResponse{Sequences: []*tinkerproto.SampledSequence{{Tokens: tinkerproto.PackInt32([]int{seq})}}}
			pb, _ := tinkerproto.Marshal(m)
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.Write(pb)
		default:
			writeJSON(w, 404, `{"detail":"Future not found"}`)
		}
	default:
		writeJSON(w, 404, `{"detail":"Not Found"}`)
	}
}

func (s *svc) setOverride(fn func(w http.ResponseWriter, r *http.Request, q svcReq, n int) bool) {
	s.mu.Lock()
	s.override = fn
	s.mu.Unlock()
}

func (s *svc) requests(path string) []svcReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []svcReq
	for _, q := range s.reqs {
		if q.Path == path {
			out = append(out, q)
		}
	}
	return out
}

func (s *svc) count(path string) int { return len(s.requests(path)) }

func (s *svc) client(t *testing.T) *Client {
	t.Helper()
	c, err := New(Config{BaseURL: s.srv.URL, APIKey: testKey, MaxRetryTime: 3 * time.Second,
		RetryBaseDelay: 2 * time.Millisecond, RetryMaxDelay: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fastSession opens a session with quick heartbeats and poll floors.
func fastSession(t *testing.T, s *svc, mod func(*SessionOptions)) *Session {
	t.Helper()
	o := SessionOptions{HeartbeatInterval: time.Hour, Timings: PollTimings{FloorMin: time.Millisecond, FloorMax: time.Millisecond}}
	if mod != nil {
		mod(&o)
	}
	sess, err := s.client(t).CreateSession(ctxT(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCreateSessionRequest(t *testing.T) {
	s := newSvc(t)
	sess := fastSession(t, s, func(o *SessionOptions) {
		o.Tags = []string{"a", "b"}
		o.UserMetadata = map[string]string{"k": "v"}
		o.ProjectID = "proj-1"
	})
	if sess.ID() != "sess-1" || sess.Messages().Warning != "quota low" {
		t.Errorf("session %q messages %+v", sess.ID(), sess.Messages())
	}
	got := s.requests("/api/v1/create_session")[0].Raw
	want := `{"tags":["a","b"],"user_metadata":{"k":"v"},"sdk_version":"0.25.0","project_id":"proj-1","type":"create_session"}`
	if got != want {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}

	// Defaults: tags [] and user_metadata {} always present, no project.
	s = newSvc(t)
	fastSession(t, s, nil)
	got = s.requests("/api/v1/create_session")[0].Raw
	if want := `{"tags":[],"user_metadata":{},"sdk_version":"0.25.0","type":"create_session"}`; got != want {
		t.Errorf("default body\n got %s\nwant %s", got, want)
	}
}

func TestSessionOptionsFromEnv(t *testing.T) {
	env := map[string]string{"TINKER_TAGS": "exp, a,,b,a ", "TINKER_PROJECT_ID": " p1 "}
	o := SessionOptionsFromEnv(func(k string) string { return env[k] })
	if strings.Join(o.Tags, "|") != "exp|a|b" || o.ProjectID != "p1" {
		t.Errorf("%+v", o)
	}
	if o := SessionOptionsFromEnv(func(string) string { return "" }); o.Tags != nil || o.ProjectID != "" {
		t.Errorf("empty env: %+v", o)
	}
}

func TestHeartbeatCadenceAndClose(t *testing.T) {
	s := newSvc(t)
	sess := fastSession(t, s, func(o *SessionOptions) { o.HeartbeatInterval = 2 * time.Millisecond })
	waitFor(t, "3 heartbeats", func() bool { return s.count("/api/v1/session_heartbeat") >= 3 })
	for _, q := range s.requests("/api/v1/session_heartbeat") {
		if q.Raw != `{"session_id":"sess-1","type":"session_heartbeat"}` {
			t.Errorf("heartbeat body %s", q.Raw)
		}
		if q.Header.Get("X-Stainless-Read-Timeout") != "10" || q.Header.Get("X-Stainless-Retry-Count") != "0" {
			t.Errorf("heartbeat headers %v", q.Header)
		}
	}
	sess.Close()
	n := s.count("/api/v1/session_heartbeat")
	time.Sleep(20 * time.Millisecond) // ten intervals
	// Close cancels a heartbeat in flight; that request may still reach the
	// server after Close returns (seen under load), but no new one may start.
	if m := s.count("/api/v1/session_heartbeat"); m > n+1 {
		t.Errorf("%d heartbeats after Close", m-n)
	}
	sess.Close() // idempotent
	if _, err := sess.CreateModel(ctxT(t), "m", DefaultLoraConfig(), nil); !errors.Is(err, ErrSessionClosed) {
		t.Errorf("CreateModel after Close: %v", err)
	}
	if _, err := sess.Sample(ctxT(t), "x", NewSampleRequest([]int{1})); !errors.Is(err, ErrSessionClosed) {
		t.Errorf("Sample after Close: %v", err)
	}
}

func TestHeartbeatWarnsOncePerFailureRun(t *testing.T) {
	s := newSvc(t)
	s.hbStatus.Store(503)
	warnings := make(chan error, 10)
	fastSession(t, s, func(o *SessionOptions) {
		o.HeartbeatInterval = time.Millisecond
		o.HeartbeatWarnAfter = 30 * time.Millisecond
		o.OnWarning = func(err error) { warnings <- err }
	})
	err := <-warnings
	if !strings.Contains(err.Error(), "heartbeats failing for") || !strings.Contains(err.Error(), "sess-1") {
		t.Errorf("warning %q", err)
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 503 {
		t.Errorf("warning does not wrap the last failure: %v", err)
	}
	// Failures go on without a second warning...
	n := s.count("/api/v1/session_heartbeat")
	waitFor(t, "more failing heartbeats", func() bool { return s.count("/api/v1/session_heartbeat") >= n+50 })
	if len(warnings) != 0 {
		t.Errorf("%d more warnings in one run of failures", len(warnings))
	}
	// ...until heartbeats recover and fail again for long enough.
	s.hbStatus.Store(0)
	n = s.count("/api/v1/session_heartbeat")
	waitFor(t, "successful heartbeats", func() bool { return s.count("/api/v1/session_heartbeat") >= n+3 })
	s.hbStatus.Store(500)
	select {
	case <-warnings:
	case <-time.After(10 * time.Second):
		t.Fatal("no warning for the second run of failures")
	}
}

func TestHeartbeatSessionEndedByServer(t *testing.T) {
	s := newSvc(t)
	s.hbStatus.Store(410)
	warnings := make(chan error, 10)
	sess := fastSession(t, s, func(o *SessionOptions) {
		o.HeartbeatInterval = time.Millisecond
		o.OnWarning = func(err error) { warnings <- err }
	})
	err := <-warnings
	if !strings.Contains(err.Error(), "ended by the server") || !strings.Contains(err.Error(), "start a new session") {
		t.Errorf("warning %q", err)
	}
	if sess.Err() == nil {
		t.Error("Err() is nil after the server ended the session")
	}
	time.Sleep(10 * time.Millisecond) // ten intervals
	if n := s.count("/api/v1/session_heartbeat"); n != 1 {
		t.Errorf("%d heartbeats; they should stop once the session is gone", n)
	}
}

func TestHeartbeatWarningDefaultsToLog(t *testing.T) {
	s := newSvc(t)
	s.hbStatus.Store(404)
	logs := &logBuf{}
	c, err := New(Config{BaseURL: s.srv.URL, APIKey: testKey, Logf: logs.logf})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.CreateSession(ctxT(t), SessionOptions{HeartbeatInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	waitFor(t, "session loss", func() bool { return sess.Err() != nil })
	if l := logs.String(); !strings.Contains(l, "warning: session sess-1 was ended by the server") || strings.Contains(l, testKey) {
		t.Errorf("log %q", l)
	}
}

func TestSeqIDNumbering(t *testing.T) {
	s := newSvc(t)
	sess := fastSession(t, s, nil)
	ctx := ctxT(t)
	seed := int64(7)
	a, err := sess.CreateModel(ctx, "base/m", LoraConfig{Rank: 8, Seed: &seed, TrainAttn: true}, map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := sess.CreateModel(ctx, "base/m", DefaultLoraConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a != "sess-1:train:0" || b != "sess-1:train:1" {
		t.Errorf("model ids %q %q", a, b)
	}
	cm := s.requests("/api/v1/create_model")
	if want := `{"session_id":"sess-1","model_seq_id":0,"base_model":"base/m","user_metadata":{"k":"v"},"lora_config":{"rank":8,"seed":7,"train_unembed":false,"train_mlp":false,"train_attn":true},"type":"create_model"}`; cm[0].Raw != want {
		t.Errorf("create_model body\n got %s\nwant %s", cm[0].Raw, want)
	}
	if want := `{"session_id":"sess-1","model_seq_id":1,"base_model":"base/m","lora_config":{"rank":32,"train_unembed":true,"train_mlp":true,"train_attn":true},"type":"create_model"}`; cm[1].Raw != want {
		t.Errorf("create_model body\n got %s\nwant %s", cm[1].Raw, want)
	}

	ttl := int64(3600)
	p1, err := sess.SaveWeightsForSampler(ctx, a, "s1", &ttl)
	if err != nil || p1 != "tinker://sess-1:train:0/sampler_weights/s1" {
		t.Fatalf("save 1: %q %v", p1, err)
	}
	p2, err := sess.SaveWeights(ctx, a, "w1", nil)
	if err != nil || p2 != "tinker://sess-1:train:0/weights/w1" {
		t.Fatalf("save 2: %q %v", p2, err)
	}
	if _, err := sess.SaveWeightsForSampler(ctx, b, "s1", nil); err != nil {
		t.Fatal(err)
	}
	sfs := s.requests("/api/v1/save_weights_for_sampler")
	sw := s.requests("/api/v1/save_weights")
	if want := `{"model_id":"sess-1:train:0","path":"s1","seq_id":1,"ttl_seconds":3600,"type":"save_weights_for_sampler"}`; sfs[0].Raw != want {
		t.Errorf("save_weights_for_sampler body\n got %s\nwant %s", sfs[0].Raw, want)
	}
	if want := `{"model_id":"sess-1:train:0","overwrite":false,"path":"w1","seq_id":2,"type":"save_weights"}`; sw[0].Raw != want {
		t.Errorf("save_weights body\n got %s\nwant %s", sw[0].Raw, want)
	}
	if sfs[1].Body["seq_id"] != 1.0 {
		t.Errorf("first save of model b has seq_id %v, want 1", sfs[1].Body["seq_id"])
	}
	// Future polls carry the operation kind.
	kinds := map[string]bool{}
	for _, q := range s.requests("/api/v1/retrieve_future") {
		kinds[q.Header.Get("X-Tinker-Request-Type")] = true
	}
	if !kinds["CreateModel"] || !kinds["SaveWeights"] || !kinds["SaveWeightsForSampler"] {
		t.Errorf("request types seen: %v", kinds)
	}

	// Concurrent saves on one model take distinct consecutive numbers.
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := sess.SaveWeights(ctx, b, fmt.Sprint("c", i), nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var seqs []int
	for _, q := range s.requests("/api/v1/save_weights") {
		if q.Body["model_id"] == b {
			seqs = append(seqs, int(q.Body["seq_id"].(float64)))
		}
	}
	sort.Ints(seqs)
	for i, v := range seqs {
		if v != i+2 {
			t.Fatalf("concurrent seq ids %v, want 2..21", seqs)
		}
	}

	// Sampling sessions count per session; asample per sampler.
	s0, err := sess.CreateSamplingSession(ctx, "base/m", "")
	if err != nil {
		t.Fatal(err)
	}
	s1, err := sess.CreateSamplingSession(ctx, "", p1)
	if err != nil {
		t.Fatal(err)
	}
	css := s.requests("/api/v1/create_sampling_session")
	if want := `{"session_id":"sess-1","sampling_session_seq_id":0,"base_model":"base/m","type":"create_sampling_session"}`; css[0].Raw != want {
		t.Errorf("create_sampling_session body\n got %s\nwant %s", css[0].Raw, want)
	}
	if want := `{"session_id":"sess-1","sampling_session_seq_id":1,"model_path":"` + p1 + `","type":"create_sampling_session"}`; css[1].Raw != want {
		t.Errorf("create_sampling_session body\n got %s\nwant %s", css[1].Raw, want)
	}
	for _, tc := range []struct {
		sampler string
		seq     int
	}{{s0, 0}, {s0, 1}, {s1, 0}, {s0, 2}} {
		res, err := sess.Sample(ctx, tc.sampler, NewSampleRequest([]int{1, 2}))
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Sequences[0].Tokens[0]; got != tc.seq {
			t.Errorf("sample on %s used seq_id %d, want %d", tc.sampler, got, tc.seq)
		}
	}
}

func TestTrainingValidation(t *testing.T) {
	s := newSvc(t)
	sess := fastSession(t, s, nil)
	ctx := ctxT(t)
	if _, err := sess.CreateModel(ctx, "m", LoraConfig{Rank: 8}, nil); err == nil || !strings.Contains(err.Error(), "at least one of train_mlp") {
		t.Errorf("no trained parts: %v", err)
	}
	if _, err := sess.CreateModel(ctx, "m", LoraConfig{Rank: 0, TrainMLP: true}, nil); err == nil {
		t.Error("rank 0 accepted")
	}
	if _, err := sess.SaveWeights(ctx, "m:train:0", "a/b", nil); err == nil {
		t.Error("name with a slash accepted")
	}
	zero := int64(0)
	if _, err := sess.SaveWeightsForSampler(ctx, "m:train:0", "a", &zero); err == nil {
		t.Error("ttl 0 accepted")
	}
	if _, err := sess.CreateSamplingSession(ctx, "", "tinker://r:train:0/weights/w"); err == nil ||
		!strings.Contains(err.Error(), "save sampler weights first") {
		t.Errorf("sampling a weights/ path: %v", err)
	}
	if _, err := sess.CreateSamplingSession(ctx, "", ""); err == nil {
		t.Error("no model accepted")
	}
	if n := s.count("/api/v1/create_model") + s.count("/api/v1/save_weights") + s.count("/api/v1/save_weights_for_sampler") +
		s.count("/api/v1/create_sampling_session"); n != 0 {
		t.Errorf("%d requests sent for invalid calls", n)
	}
}

func TestGetInfo(t *testing.T) {
	s := newSvc(t)
	sess := fastSession(t, s, nil)
	info, err := sess.GetInfo(ctxT(t), "sess-1:train:0")
	if err != nil {
		t.Fatal(err)
	}
	if info.ModelID != "sess-1:train:0" || info.ModelData.Arch != "llama" || info.ModelData.Tokenizer() != "org/tok" ||
		info.LoraRank == nil || *info.LoraRank != 8 {
		t.Errorf("%+v", info)
	}
	if q := s.requests("/api/v1/get_info")[0].Raw; q != `{"model_id":"sess-1:train:0","type":"get_info"}` {
		t.Errorf("body %s", q)
	}
}

func TestSessionOnStateAndFailedFuture(t *testing.T) {
	s := newSvc(t)
	var mu sync.Mutex
	var seen []string
	sess := fastSession(t, s, func(o *SessionOptions) {
		o.OnState = func(st State) {
			mu.Lock()
			seen = append(seen, st.Kind+":"+st.Status)
			mu.Unlock()
		}
	})
	s.setOverride(func(w http.ResponseWriter, r *http.Request, q svcReq, n int) bool {
		if q.Path == "/api/v1/retrieve_future" && strings.HasPrefix(fmt.Sprint(q.Body["request_id"]), "cm/") && n == 1 {
			writeJSON(w, 200, `{"type":"try_again","queue_state":"active"}`)
			return true
		}
		if q.Path == "/api/v1/retrieve_future" && strings.HasPrefix(fmt.Sprint(q.Body["request_id"]), "sv/") {
			writeJSON(w, 200, `{"error":"Checkpoint tinker://x/sampler_weights/s already exists","category":"user"}`)
			return true
		}
		return false
	})
	m, err := sess.CreateModel(ctxT(t), "base/m", DefaultLoraConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if got := strings.Join(seen, ","); got != "CreateModel:queued,CreateModel:running,CreateModel:done" {
		t.Errorf("states %s", got)
	}
	mu.Unlock()
	_, err = sess.SaveWeightsForSampler(ctxT(t), m, "s", nil)
	var rf *RequestFailedError
	if !errors.As(err, &rf) || rf.Category != "user" || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("failed save: %v", err)
	}
}

func TestCloseFromWarningCallback(t *testing.T) {
	s := newSvc(t)
	s.hbStatus.Store(410)
	closed := make(chan struct{})
	var sess *Session
	var ready sync.WaitGroup
	ready.Add(1)
	sess = fastSession(t, s, func(o *SessionOptions) {
		o.HeartbeatInterval = time.Millisecond
		o.OnWarning = func(error) {
			ready.Wait()
			sess.Close() // must not deadlock with the heartbeat goroutine
			close(closed)
		}
	})
	ready.Done()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close from OnWarning deadlocked")
	}
}
