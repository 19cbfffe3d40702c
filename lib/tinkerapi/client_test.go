package tinkerapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNewConfigErrors(t *testing.T) {
	env := func(m map[string]string) func(string) string {
		return func(k string) string { return m[k] }
	}
	_, err := New(ConfigFromEnv(env(nil)))
	if err == nil || err.Error() != msgNoAPIKey {
		t.Fatalf("no key: got %v, want %q", err, msgNoAPIKey)
	}
	msg, details := CLIError(err)
	if msg != "Failed to connect to Tinker API: "+msgNoAPIKey || details != "Please check your network connection and API configuration." {
		t.Errorf("CLIError(no key) = %q, %q", msg, details)
	}
	_, err = New(ConfigFromEnv(env(map[string]string{"TINKER_API_KEY": "abc"})))
	if err == nil || err.Error() != "The api_key must start with the 'tml-' prefix" {
		t.Fatalf("bad prefix: got %v", err)
	}
	for _, key := range []string{"tml-abc", "eyJhbGciOi.x.y"} {
		c, err := New(ConfigFromEnv(env(map[string]string{"TINKER_API_KEY": key, "TINKER_BASE_URL": ""})))
		if err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		if c.BaseURL() != DefaultBaseURL {
			t.Errorf("empty TINKER_BASE_URL: base %q, want default", c.BaseURL())
		}
	}
	// A credential command alone is enough; it is not run by New.
	if _, err := New(Config{CredentialCmd: "exit 1"}); err != nil {
		t.Errorf("credential cmd only: %v", err)
	}
	for _, bad := range []string{"ftp://x", "localhost:8000", "http://", "http://u:p@host"} {
		if _, err := New(Config{APIKey: "tml-x", BaseURL: bad}); err == nil {
			t.Errorf("base URL %q accepted", bad)
		}
	}
	// A key put into the URL never shows in the error.
	for bad, shown := range map[string]string{
		"https://user:tml-secret@host:8000/x?y": "https://<redacted>@host:8000/x?<redacted>",
		"ftp://host/?api_key=tml-secret":        "ftp://host/?<redacted>",
		"tml-secret@host":                       "<redacted>@host",
		"https://host#tml-secret":               "https://host#<redacted>",
		"http://a@b@host/?q":                    "http://<redacted>@host/?<redacted>",
	} {
		_, err := New(Config{APIKey: "tml-x", BaseURL: bad})
		if err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), shown) {
			t.Errorf("base URL %q: err = %v, want it to show %q", bad, err, shown)
		}
	}
	cfg := Config{APIKey: testKey, CredentialCmd: "echo tml-cmdsecret"}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg)} {
		if strings.Contains(s, testKey) || strings.Contains(s, "cmdsecret") {
			t.Errorf("Config formatting leaks a secret: %s", s)
		}
	}
}

func TestBasePrefixHandshakeAndHeaders(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		switch r.URL.Path {
		case "/services/tinker-prod/api/v1/client/config":
			writeJSON(w, 200, `{"pjwt_auth_enabled": false, "unknown_flag": 1}`)
		case "/services/tinker-prod/api/v1/client/dynamic_config":
			writeJSON(w, 404, `{"detail":"Not Found"}`)
		case "/services/tinker-prod/api/v1/training_runs":
			writeJSON(w, 200, `{"training_runs": [`+runJSON+`], "cursor": {"offset": 0, "limit": 20, "total_count": 1}}`)
		default:
			writeJSON(w, 500, `{"detail":"unexpected path"}`)
		}
		return true
	})
	c, _ := testClient(t, f, func(c *Config) {
		c.BaseURL = f.srv.URL + "/services/tinker-prod/"
		c.CFAccessClientID, c.CFAccessClientSecret = "cf-id", "cf-secret-value"
	})
	ctx := ctxT(t)
	for range 2 {
		runs, err := c.ListTrainingRuns(ctx, 20, 0, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(runs.TrainingRuns) != 1 || runs.TrainingRuns[0].LastSamplerCheckpoint.TinkerPath != "tinker://run-1:train:0/sampler_weights/final" || runs.Cursor.TotalCount != 1 {
			t.Fatalf("decoded %+v", runs)
		}
	}
	reqs := f.all()
	want := []string{
		"POST /services/tinker-prod/api/v1/client/config",
		"POST /services/tinker-prod/api/v1/client/dynamic_config",
		"GET /services/tinker-prod/api/v1/training_runs?limit=20&offset=0&access_scope=owned",
		"GET /services/tinker-prod/api/v1/training_runs?limit=20&offset=0&access_scope=owned",
	}
	if len(reqs) != len(want) {
		t.Fatalf("got %d requests, want %d: %+v", len(reqs), len(want), reqs)
	}
	for i, r := range reqs {
		if got := r.Method + " " + r.URI; got != want[i] {
			t.Errorf("request %d: %s, want %s", i, got, want[i])
		}
		if r.Header.Get("X-API-Key") != testKey {
			t.Errorf("request %d: X-API-Key %q", i, r.Header.Get("X-API-Key"))
		}
		if r.Header.Get("CF-Access-Client-Id") != "cf-id" || r.Header.Get("CF-Access-Client-Secret") != "cf-secret-value" {
			t.Errorf("request %d: CF access headers missing", i)
		}
	}
	if reqs[0].Body != `{"sdk_version":"0.25.0"}` || reqs[1].Body != `{"sdk_version":"0.25.0"}` {
		t.Errorf("handshake bodies %q, %q", reqs[0].Body, reqs[1].Body)
	}
	if ct := reqs[0].Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("POST Content-Type %q", ct)
	}
	if reqs[0].Header.Get("X-Idempotency-Key") == "" || reqs[2].Header.Get("X-Idempotency-Key") != "" {
		t.Errorf("idempotency key should be on POST only")
	}
	if ct := reqs[2].Header.Get("Content-Type"); ct != "" {
		t.Errorf("GET has Content-Type %q", ct)
	}
	sc, err := c.ServerConfig(ctx)
	if err != nil || sc.PJWTAuthEnabled || !strings.Contains(string(sc.Raw), "unknown_flag") {
		t.Errorf("ServerConfig = %+v, %v", sc, err)
	}
}

func TestHandshakeOnceUnderConcurrency(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.URL.Path == "/api/v1/healthz" {
			writeJSON(w, 200, `{"status":"ok"}`)
			return true
		}
		return false
	})
	c, _ := testClient(t, f)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() { errs <- c.Healthz(ctxT(t)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := f.count("/api/v1/client/config"); n != 1 {
		t.Errorf("client/config sent %d times, want 1", n)
	}
	if n := f.count("/api/v1/healthz"); n != 16 {
		t.Errorf("healthz sent %d times, want 16", n)
	}
}

func TestHandshakeFailureIsNotCached(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		switch {
		case r.URL.Path == "/api/v1/client/config" && n == 1:
			writeJSON(w, 401, `{"detail":"Invalid API key"}`)
		case r.URL.Path == "/api/v1/healthz":
			writeJSON(w, 200, `{"status":"ok"}`)
		default:
			return false
		}
		return true
	})
	c, _ := testClient(t, f)
	err := c.Healthz(ctxT(t))
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 401 {
		t.Fatalf("first call: %v, want 401", err)
	}
	if msg, det := CLIError(err); msg != "Authentication failed" ||
		det != "Please check your API key or authentication credentials.\nDetails: Error code: 401 - {'detail': 'Invalid API key'}" {
		t.Errorf("CLIError = %q, %q", msg, det)
	}
	if err := c.Healthz(ctxT(t)); err != nil {
		t.Fatalf("second call: %v", err)
	}
	if n := f.count("/api/v1/client/config"); n != 2 {
		t.Errorf("client/config sent %d times, want 2 (one failed, one retried later)", n)
	}
}

func TestClientConfig404Tolerated(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		switch r.URL.Path {
		case "/api/v1/client/config":
			writeJSON(w, 404, `{"detail":"Not Found"}`)
		case "/api/v1/healthz":
			writeJSON(w, 200, `{"status":"ok"}`)
		default:
			return false
		}
		return true
	})
	c, _ := testClient(t, f)
	if err := c.Healthz(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if f.count("/api/v1/auth/token") != 0 || f.count("/api/v1/client/config") != 1 {
		t.Errorf("unexpected handshake traffic: %+v", f.all())
	}
}

func TestDynamicConfigErrorFailsHandshake(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.URL.Path == "/api/v1/client/dynamic_config" {
			writeJSON(w, 403, `{"detail":"forbidden"}`)
			return true
		}
		return false
	})
	c, _ := testClient(t, f)
	err := c.Healthz(ctxT(t))
	if msg, _ := CLIError(err); msg != "Permission denied" {
		t.Fatalf("err %v → %q, want Permission denied", err, msg)
	}
}

func TestRequestPathsAndBodies(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		p := r.URL.Path
		switch {
		case strings.HasPrefix(p, "/api/v1/client/"):
			return false
		case p == "/api/v1/weights_info":
			writeJSON(w, 200, `{"base_model": "Qwen/Qwen3-8B", "is_lora": true, "lora_rank": 32, "train_mlp": true}`)
		case p == "/api/v1/sessions":
			writeJSON(w, 200, `{"sessions": ["s1", "s2"]}`)
		case strings.HasSuffix(p, "/trace_export"):
			writeJSON(w, 200, `{"status": "ready", "url": "http://x/trace"}`)
		case strings.HasPrefix(p, "/api/v1/sessions/"):
			writeJSON(w, 200, `{"training_run_ids": ["r:train:0"], "sampler_ids": []}`)
		case strings.HasPrefix(p, "/api/v1/samplers/"):
			writeJSON(w, 200, `{"sampler_id": "s:sample:0", "base_model": "Qwen/Qwen3-8B", "model_path": null}`)
		case p == "/api/v1/billing/usage/events":
			writeJSON(w, 200, `{"data": [], "sessions": {"b": {"user_metadata": null}, "a": {"user_metadata": {"z": "1", "y": "2"}}}}`)
		case p == "/api/v1/get_server_capabilities":
			writeJSON(w, 200, `{"supported_models": [{"model_name": "Qwen/Qwen3-8B", "max_context_length": 32768}]}`)
		case p == "/api/v1/checkpoints":
			writeJSON(w, 200, `{"checkpoints": [`+checkpointJSON+`], "cursor": {"offset": 5, "limit": 1, "total_count": 9}}`)
		case strings.HasSuffix(p, "/checkpoints") && r.Method == "GET":
			writeJSON(w, 200, `{"checkpoints": [`+checkpointJSON+`], "cursor": null}`)
		case strings.HasPrefix(p, "/api/v1/training_runs/") && r.Method == "GET":
			writeJSON(w, 200, runJSON)
		default:
			w.WriteHeader(204) // mutations: any 2xx, body ignored
		}
		return true
	})
	c, _ := testClient(t, f)
	ctx := ctxT(t)
	ttl := int64(86400)
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	run, err := c.GetTrainingRun(ctx, "run-1:train:0", "accessible")
	check(err)
	if run.LoraRank == nil || *run.LoraRank != 16 || run.UserMetadata["experiment"] != "demo" || run.LastCheckpoint != nil {
		t.Errorf("run decoded as %+v", run)
	}
	cps, err := c.ListRunCheckpoints(ctx, "run-1:train:0")
	check(err)
	if len(cps.Checkpoints) != 1 || cps.Cursor != nil || *cps.Checkpoints[0].SizeBytes != 176264704 || cps.Checkpoints[0].RunID() != "run-1:train:0" {
		t.Errorf("checkpoints decoded as %+v", cps)
	}
	page, err := c.ListUserCheckpoints(ctx, 1, 5)
	check(err)
	if page.Cursor == nil || page.Cursor.TotalCount != 9 {
		t.Errorf("user checkpoints cursor %+v", page.Cursor)
	}
	check(c.DeleteCheckpoint(ctx, "run-1:train:0", "weights/0001"))
	check(c.PublishCheckpoint(ctx, "run-1:train:0", "sampler_weights/final"))
	check(c.UnpublishCheckpoint(ctx, "run-1:train:0", "sampler_weights/final"))
	check(c.SetCheckpointTTL(ctx, "run-1:train:0", "weights/0001", &ttl))
	check(c.SetCheckpointTTL(ctx, "run-1:train:0", "weights/0001", nil))
	wi, err := c.WeightsInfo(ctx, "tinker://run-1:train:0/sampler_weights/final")
	check(err)
	if wi.BaseModel != "Qwen/Qwen3-8B" || !wi.IsLora || *wi.LoraRank != 32 || *wi.TrainMLP != true || wi.TrainAttn != nil {
		t.Errorf("weights info %+v", wi)
	}
	ss, err := c.ListSessions(ctx, 20, 0, "")
	check(err)
	if len(ss.Sessions) != 2 {
		t.Errorf("sessions %+v", ss)
	}
	_, err = c.GetSession(ctx, "sess-1", "")
	check(err)
	smp, err := c.GetSampler(ctx, "sess-1:sample:0")
	check(err)
	if smp.ModelPath != nil || smp.BaseModel != "Qwen/Qwen3-8B" {
		t.Errorf("sampler %+v", smp)
	}
	te, err := c.TraceExport(ctx, "sess-1")
	check(err)
	if te.Status != "ready" || te.URL != "http://x/trace" {
		t.Errorf("trace export %+v", te)
	}
	bu, err := c.BillingUsageRaw(ctx, "2026-07-13T00:00:00Z", "2026-07-14T00:00:00")
	check(err)
	if len(bu.Sessions) != 2 || bu.Sessions[0].SessionID != "b" || bu.Sessions[0].UserMetadata != nil || string(bu.Sessions[1].UserMetadata) != `{"z": "1", "y": "2"}` {
		t.Errorf("billing sessions %+v", bu.Sessions)
	}
	caps, err := c.GetServerCapabilities(ctx)
	check(err)
	if len(caps.SupportedModels) != 1 || caps.SupportedModels[0].MaxContextLength != 32768 {
		t.Errorf("capabilities %+v", caps)
	}

	want := []string{
		"GET /api/v1/training_runs/run-1:train:0?access_scope=accessible ",
		"GET /api/v1/training_runs/run-1:train:0/checkpoints ",
		"GET /api/v1/checkpoints?limit=1&offset=5 ",
		"DELETE /api/v1/training_runs/run-1:train:0/checkpoints/weights/0001 ",
		"POST /api/v1/training_runs/run-1:train:0/checkpoints/sampler_weights/final/publish ",
		"DELETE /api/v1/training_runs/run-1:train:0/checkpoints/sampler_weights/final/publish ",
		`PUT /api/v1/training_runs/run-1:train:0/checkpoints/weights/0001/ttl {"ttl_seconds":86400}`,
		`PUT /api/v1/training_runs/run-1:train:0/checkpoints/weights/0001/ttl {"ttl_seconds":null}`,
		`POST /api/v1/weights_info {"tinker_path":"tinker://run-1:train:0/sampler_weights/final"}`,
		"GET /api/v1/sessions?limit=20&offset=0&access_scope=owned ",
		"GET /api/v1/sessions/sess-1?access_scope=owned ",
		"GET /api/v1/samplers/sess-1:sample:0 ",
		"GET /api/v1/sessions/sess-1/trace_export ",
		"GET /api/v1/billing/usage/events?starting_on=2026-07-13T00%3A00%3A00Z&ending_before=2026-07-14T00%3A00%3A00 ",
		"GET /api/v1/get_server_capabilities ",
	}
	var got []string
	for _, r := range f.all() {
		if !strings.HasPrefix(r.URI, "/api/v1/client/") {
			got = append(got, r.Method+" "+r.URI+" "+r.Body)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	for _, r := range f.all() {
		if r.Method != "GET" && r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: Content-Type %q, want application/json even without a body", r.Method, r.URI, r.Header.Get("Content-Type"))
		}
	}

	// Malformed checkpoint ids are refused before any request.
	before := len(f.all())
	for _, id := range []string{"weights", "/x", "weights/a/b"} {
		if err := c.DeleteCheckpoint(ctx, "r", id); err == nil {
			t.Errorf("checkpoint id %q accepted", id)
		}
	}
	if len(f.all()) != before {
		t.Error("invalid ids reached the server")
	}
	// An empty run id or name goes out as the official SDK sends it; the
	// server answers for it.
	c.DeleteCheckpoint(ctx, "", "weights/1")
	c.DeleteCheckpoint(ctx, "r", "weights/")
	var uris []string
	for _, r := range f.all()[before:] {
		uris = append(uris, r.Method+" "+r.URI)
	}
	wantURIs := []string{"DELETE /api/v1/training_runs//checkpoints/weights/1", "DELETE /api/v1/training_runs/r/checkpoints/weights/"}
	if strings.Join(uris, "\n") != strings.Join(wantURIs, "\n") {
		t.Errorf("requests %q, want %q", uris, wantURIs)
	}
}

func TestBillingUsageJSONShape(t *testing.T) {
	body := `{"data": [{"bucket_start": "2026-07-13T05:00:00Z", "bucket_end": "2026-07-13T06:00:00Z",
	  "base_model": "Qwen/Qwen3-8B", "user_id": "u1", "extra": 1,
	  "event_info": {"token_count": 12, "cached": true, "type": "sampling_prefill", "junk": 2}}],
	  "sessions": {"s2": {"user_metadata": {"k": "v"}}, "s1": {"user_metadata": null}}}`
	var bu BillingUsageResponse
	if err := json.Unmarshal([]byte(body), &bu); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(bu)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"data":[{"bucket_start":"2026-07-13T05:00:00Z","bucket_end":"2026-07-13T06:00:00Z","base_model":"Qwen/Qwen3-8B","user_id":"u1","user_name":null,"session_id":null,"project_id":null,"event_info":{"type":"sampling_prefill","cached":true,"token_count":12}}],"sessions":{"s2":{"user_metadata":{"k":"v"}},"s1":{"user_metadata":null}}}`
	if string(out) != want {
		t.Errorf("marshal:\n%s\nwant\n%s", out, want)
	}
}

func TestFlexibleDatetimes(t *testing.T) {
	want := time.Date(2025, 12, 27, 8, 51, 24, 966034000, time.UTC)
	for _, lit := range []string{`"2025-12-27T08:51:24.966034Z"`, `"2025-12-27T08:51:24.966034"`,
		`"2025-12-27 08:51:24.966034+00:00"`, `1766825484.966034`, `"2025-12-27T09:51:24.966034+01:00"`} {
		var cp Checkpoint
		body := `{"checkpoint_id":"weights/1","time":` + lit + `,"expires_at":` + lit + `}`
		if err := json.Unmarshal([]byte(body), &cp); err != nil {
			t.Errorf("%s: %v", lit, err)
			continue
		}
		if cp.Time.Sub(want).Abs() > time.Microsecond || cp.ExpiresAt == nil || !cp.ExpiresAt.Equal(cp.Time) || cp.CheckpointID != "weights/1" {
			t.Errorf("%s: decoded %+v", lit, cp)
		}
	}
	var cp Checkpoint
	if err := json.Unmarshal([]byte(`{"time":"yesterday"}`), &cp); err == nil {
		t.Error("bad datetime accepted")
	}
	if err := json.Unmarshal([]byte(`{"time":"2025-12-27T08:51:24Z","expires_at":null}`), &cp); err != nil || cp.ExpiresAt != nil {
		t.Errorf("null expires_at: %+v, %v", cp, err)
	}
	var run TrainingRun
	if err := json.Unmarshal([]byte(runJSON), &run); err != nil || run.LastRequestTime.IsZero() || run.LastSamplerCheckpoint.Time.IsZero() {
		t.Errorf("run: %+v, %v", run, err)
	}
}
