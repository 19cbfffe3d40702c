package tinkerapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// promptly is a generous bound for "returned at once" checks; the
// interesting assertions are on the error kinds, not on timing.
const promptly = 5 * time.Second

func TestRetry429HonoursRetryAfter(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.URL.Path != "/api/v1/weights_info" {
			return false
		}
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, 429, `{"detail":"slow down"}`)
			return true
		}
		if n == 2 {
			w.Header().Set("Retry-After-Ms", "30")
			writeJSON(w, 429, `{"detail":"slow down"}`)
			return true
		}
		writeJSON(w, 200, `{"base_model":"m","is_lora":false}`)
		return true
	})
	c, logs := testClient(t, f)
	if _, err := c.WeightsInfo(ctxT(t), "tinker://r/weights/1"); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests("/api/v1/weights_info")
	if len(reqs) != 3 {
		t.Fatalf("%d attempts, want 3", len(reqs))
	}
	key := reqs[0].Header.Get("X-Idempotency-Key")
	if !strings.HasPrefix(key, "stainless-python-retry-") {
		t.Errorf("idempotency key %q", key)
	}
	for i, r := range reqs {
		if r.Header.Get("X-Idempotency-Key") != key {
			t.Errorf("attempt %d changed the idempotency key", i)
		}
		if got := r.Header.Get("X-Stainless-Retry-Count"); got != fmt.Sprint(i) {
			t.Errorf("attempt %d: retry count header %q", i, got)
		}
	}
	// The waits chosen are the server's, not the (2 ms) backoff.
	if l := logs.String(); !strings.Contains(l, "retrying in 1s (retry 1)") || !strings.Contains(l, "retrying in 30ms (retry 2)") {
		t.Errorf("retry log does not show the Retry-After waits:\n%s", l)
	}
	// A new call gets a new key.
	if _, err := c.WeightsInfo(ctxT(t), "tinker://r/weights/1"); err != nil {
		t.Fatal(err)
	}
	if reqs := f.requests("/api/v1/weights_info"); reqs[3].Header.Get("X-Idempotency-Key") == key {
		t.Error("idempotency key reused across calls")
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		h    map[string]string
		want time.Duration
		ok   bool
	}{
		{map[string]string{"Retry-After": "2.5"}, 2500 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "120", "Retry-After": "9"}, 120 * time.Millisecond, true},
		{map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second, true},
		{map[string]string{"Retry-After": "61"}, 0, false}, // too long: use backoff
		{map[string]string{"Retry-After": "0"}, 0, false},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{nil, 0, false},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.h {
			h.Set(k, v)
		}
		d, ok := retryAfter(h, now)
		if d != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%v) = %v, %v; want %v, %v", tc.h, d, ok, tc.want, tc.ok)
		}
	}
}

func TestBackoffGrowsWithJitterAndCap(t *testing.T) {
	c, err := New(Config{APIKey: testKey, RetryBaseDelay: 100 * time.Millisecond, RetryMaxDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for retries, base := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		base *= time.Millisecond
		for range 50 {
			d := c.backoff(retries)
			if d <= base*3/4 || d > base {
				t.Fatalf("backoff(%d) = %v, want in (%v, %v]", retries, d, base*3/4, base)
			}
		}
	}
	if d := c.backoff(1000); d <= 0 || d > time.Second {
		t.Errorf("backoff overflowed: %v", d)
	}
}

func TestFlapping503sSucceed(t *testing.T) {
	attempts := 0
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.URL.Path != "/api/v1/training_runs/r1" {
			return false
		}
		attempts++
		if attempts%3 != 0 { // two failures, then one success, repeatedly
			writeJSON(w, 503, `{"detail":"busy"}`)
			return true
		}
		writeJSON(w, 200, runJSON)
		return true
	})
	c, _ := testClient(t, f)
	for i := range 5 {
		if _, err := c.GetTrainingRun(ctxT(t), "r1", ""); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if attempts != 15 {
		t.Errorf("%d attempts, want 15", attempts)
	}
}

func TestRetriesStopAtBudget(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.URL.Path != "/api/v1/healthz" {
			return false
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(502)
		io.WriteString(w, "  bad gateway\n")
		return true
	})
	c, _ := testClient(t, f, func(c *Config) { c.MaxRetryTime = 200 * time.Millisecond })
	start := time.Now()
	err := c.Healthz(ctxT(t))
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 502 || apiErr.Message != "bad gateway" {
		t.Fatalf("err = %#v", err)
	}
	if n := f.count("/api/v1/healthz"); n < 3 {
		t.Errorf("only %d attempts: 5xx should be retried", n)
	}
	if time.Since(start) > promptly {
		t.Errorf("retry budget of 200ms not respected: %v", time.Since(start))
	}
	msg, det := CLIError(err)
	if msg != "Internal server error" || det != "The Tinker API encountered an internal error. Please try again later.\nDetails: bad gateway" {
		t.Errorf("CLIError = %q, %q", msg, det)
	}
}

func TestNonRetryableStatuses(t *testing.T) {
	cases := []struct {
		status  int
		body    string
		msg     string
		details string
	}{
		{401, `{"detail":"bad key"}`, "Authentication failed", "Please check your API key or authentication credentials.\nDetails: Error code: 401 - {'detail': 'bad key'}"},
		{403, `{"detail":"nope"}`, "Permission denied", "You don't have permission to access this resource.\nDetails: Error code: 403 - {'detail': 'nope'}"},
		{404, `{"detail": "Training run not found"}`, "Resource not found", "Details: Error code: 404 - {'detail': 'Training run not found'}"},
		{400, `{"detail":"Invalid checkpoint tinker path tinker://x."}`, "Invalid request", "Details: Error code: 400 - {'detail': 'Invalid checkpoint tinker path tinker://x.'}"},
		{422, `{"detail":[{"loc":["query","limit"],"msg":"bad","input":null,"ok":true}]}`, "Invalid data provided", "Details: Error code: 422 - {'detail': [{'loc': ['query', 'limit'], 'msg': 'bad', 'input': None, 'ok': True}]}"},
		{418, `teapot`, "API error (status 418)", "Details: teapot"},
		{400, ` "plain string" `, "Invalid request", "Details: Error code: 400 - plain string"},
		{400, `[1.0, null, "it's"]`, "Invalid request", `Details: Error code: 400 - [1.0, None, "it's"]`},
		{404, ``, "Resource not found", "Details: Error code: 404"},
		{507, `{"detail":"the server's disk is full; delete checkpoints to free space"}`, "Insufficient storage: the server's disk is full; delete checkpoints to free space", ""},
		{507, ``, "Insufficient storage on the server", ""},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
				if r.URL.Path != "/api/v1/training_runs/r" {
					return false
				}
				writeJSON(w, tc.status, tc.body)
				return true
			})
			c, _ := testClient(t, f)
			_, err := c.GetTrainingRun(ctxT(t), "r", "")
			if n := f.count("/api/v1/training_runs/r"); n != 1 {
				t.Errorf("%d attempts, want 1", n)
			}
			msg, det := CLIError(err)
			if msg != tc.msg || det != tc.details {
				t.Errorf("CLIError = %q, %q\nwant %q, %q", msg, det, tc.msg, tc.details)
			}
		})
	}
}

// A full disk is reported at once, by every retry layer, whatever the
// server's X-Should-Retry says.
func TestInsufficientStorageNotRetried(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.URL.Path != "/api/v1/sessions/full" {
			return false
		}
		w.Header().Set("X-Should-Retry", "true")
		writeJSON(w, 507, `{"detail":"disk full"}`)
		return true
	})
	c, _ := testClient(t, f)
	if _, err := c.GetSession(ctxT(t), "full", ""); err == nil || f.count("/api/v1/sessions/full") != 1 {
		t.Errorf("507: err %v, %d attempts, want 1", err, f.count("/api/v1/sessions/full"))
	}
	if retryableSample(&APIError{Status: 507}) || !retryableSample(&APIError{Status: 503}) {
		t.Error("sampling retries: want 503 retried and 507 not")
	}
}

func TestShouldRetryHeaderAndBare400(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		switch r.URL.Path {
		case "/api/v1/sessions/no": // retryable status, server says no
			w.Header().Set("X-Should-Retry", "false")
			writeJSON(w, 503, `{"detail":"down"}`)
		case "/api/v1/sessions/yes": // final status, server says retry
			if n == 1 {
				w.Header().Set("X-Should-Retry", "true")
				writeJSON(w, 404, `{"detail":"not yet"}`)
			} else {
				writeJSON(w, 200, `{"training_run_ids":[],"sampler_ids":[]}`)
			}
		case "/api/v1/sessions/bare": // proxy rejection: empty 400
			if n == 1 {
				w.WriteHeader(400)
			} else {
				writeJSON(w, 200, `{"training_run_ids":[],"sampler_ids":[]}`)
			}
		default:
			return false
		}
		return true
	})
	c, _ := testClient(t, f)
	ctx := ctxT(t)
	if _, err := c.GetSession(ctx, "no", ""); err == nil || f.count("/api/v1/sessions/no") != 1 {
		t.Errorf("x-should-retry:false: err %v, %d attempts", err, f.count("/api/v1/sessions/no"))
	}
	if _, err := c.GetSession(ctx, "yes", ""); err != nil || f.count("/api/v1/sessions/yes") != 2 {
		t.Errorf("x-should-retry:true: err %v, %d attempts", err, f.count("/api/v1/sessions/yes"))
	}
	if _, err := c.GetSession(ctx, "bare", ""); err != nil || f.count("/api/v1/sessions/bare") != 2 {
		t.Errorf("bare 400: err %v, %d attempts", err, f.count("/api/v1/sessions/bare"))
	}
}

func TestPublishConflictIsFinal(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		if !strings.HasSuffix(r.URL.Path, "/publish") && r.URL.Path != "/api/v1/checkpoints" {
			return false
		}
		writeJSON(w, 409, `{"detail":"Checkpoint is already public"}`)
		return true
	})
	c, _ := testClient(t, f, func(c *Config) { c.MaxRetryTime = 100 * time.Millisecond })
	err := c.PublishCheckpoint(ctxT(t), "r", "weights/1")
	if msg, det := CLIError(err); msg != "API error (status 409)" || det != "Details: Error code: 409 - {'detail': 'Checkpoint is already public'}" {
		t.Errorf("CLIError = %q, %q", msg, det)
	}
	if n := f.count("/api/v1/training_runs/r/checkpoints/weights/1/publish"); n != 1 {
		t.Errorf("publish 409 attempted %d times, want 1", n)
	}
	// Elsewhere 409 follows the SDK's generic policy and is retried.
	c.ListUserCheckpoints(ctxT(t), 1, 0)
	if n := f.count("/api/v1/checkpoints"); n < 2 {
		t.Errorf("generic 409 attempted %d times, want retries", n)
	}
}

// hijackReset sends headers promising a long body, part of it, then drops
// the connection.
func hijackReset(t *testing.T, w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		t.Error("response writer cannot hijack")
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		t.Error(err)
		return
	}
	buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{\"checkpoints\": [")
	buf.Flush()
	conn.Close()
}

func TestConnectionResetMidBody(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		switch {
		case r.URL.Path == "/api/v1/training_runs/flaky/checkpoints" && n <= 2:
			hijackReset(t, w)
		case r.URL.Path == "/api/v1/training_runs/flaky/checkpoints":
			writeJSON(w, 200, `{"checkpoints": [`+checkpointJSON+`]}`)
		case r.URL.Path == "/api/v1/training_runs/dead/checkpoints":
			hijackReset(t, w)
		default:
			return false
		}
		return true
	})
	c, logs := testClient(t, f, func(c *Config) { c.MaxRetryTime = 300 * time.Millisecond })
	got, err := c.ListRunCheckpoints(ctxT(t), "flaky")
	if err != nil || len(got.Checkpoints) != 1 {
		t.Fatalf("flaky: %v, %+v", err, got)
	}
	if n := f.count("/api/v1/training_runs/flaky/checkpoints"); n != 3 {
		t.Errorf("flaky: %d attempts, want 3", n)
	}
	_, err = c.ListRunCheckpoints(ctxT(t), "dead")
	if !errors.Is(err, ErrConnection) || errors.Is(err, ErrTimeout) {
		t.Fatalf("dead: err %v, want a connection error", err)
	}
	msg, det := CLIError(err)
	if msg != "Connection failed" || det != "Could not connect to the Tinker API. Please check your network connection.\nDetails: Connection error." {
		t.Errorf("CLIError = %q, %q", msg, det)
	}
	if !strings.Contains(logs.String(), "connection error") {
		t.Errorf("retries not logged:\n%s", logs)
	}
}

func TestConnectionRefused(t *testing.T) {
	f := newFake(t, nil)
	c, _ := testClient(t, f, func(c *Config) { c.MaxRetryTime = 100 * time.Millisecond })
	f.srv.Close()
	err := c.Healthz(ctxT(t))
	if !errors.Is(err, ErrConnection) {
		t.Fatalf("err %v, want ErrConnection", err)
	}
}

// stall blocks a handler until the client goes away or the test ends.
func stall(r *http.Request, done <-chan struct{}) {
	select {
	case <-r.Context().Done():
	case <-done:
	}
}

func TestStalledServerCancel(t *testing.T) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.URL.Path != "/api/v1/checkpoints" {
			return false
		}
		stall(r, done)
		return true
	})
	c, _ := testClient(t, f, func(c *Config) { c.RequestTimeout = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.ListUserCheckpoints(ctx, 20, 0)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if errors.Is(err, ErrTimeout) || errors.Is(err, ErrConnection) {
		t.Errorf("cancel reported as a transport error: %v", err)
	}
	if el := time.Since(start); el > promptly {
		t.Errorf("cancel took %v", el)
	}
	if msg, _ := CLIError(err); msg != "Aborted!" {
		t.Errorf("CLIError(cancel) = %q", msg)
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.URL.Path != "/api/v1/healthz" {
			return false
		}
		w.Header().Set("Retry-After", "30")
		writeJSON(w, 503, `{"detail":"later"}`)
		return true
	})
	c, _ := testClient(t, f, func(c *Config) { c.MaxRetryTime = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	err := c.Healthz(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if el := time.Since(start); el > promptly {
		t.Errorf("cancel during a 30 s backoff took %v", el)
	}
	if n := f.count("/api/v1/healthz"); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}

func TestPerAttemptTimeout(t *testing.T) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		switch r.URL.Path {
		case "/api/v1/healthz":
			stall(r, done)
		case "/api/v1/sessions": // headers at once, body never finishes
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(200)
			io.WriteString(w, `{"sessions": [`)
			w.(http.Flusher).Flush()
			stall(r, done)
		default:
			return false
		}
		return true
	})
	c, _ := testClient(t, f, func(c *Config) {
		c.RequestTimeout = 50 * time.Millisecond
		c.MaxRetryTime = 150 * time.Millisecond
	})
	err := c.Healthz(ctxT(t))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("stalled headers: err %v, want ErrTimeout", err)
	}
	if n := f.count("/api/v1/healthz"); n < 2 {
		t.Errorf("timeouts should be retried: %d attempts", n)
	}
	msg, det := CLIError(err)
	if msg != "Request timeout" || det != "The request to Tinker API timed out. Please try again.\nDetails: Request timed out." {
		t.Errorf("CLIError = %q, %q", msg, det)
	}
	if _, err := c.ListSessions(ctxT(t), 20, 0, ""); !errors.Is(err, ErrTimeout) {
		t.Fatalf("stalled body: err %v, want ErrTimeout", err)
	}
}

func TestSchemaValidation(t *testing.T) {
	bodies := map[string]string{
		"/api/v1/training_runs/missing-owner":        strings.Replace(runJSON, `"model_owner": "tml:organization_user:274df404",`, "", 1),
		"/api/v1/training_runs/null-base":            strings.Replace(runJSON, `"meta-llama/Llama-3.1-8B"`, "null", 1),
		"/api/v1/training_runs/bad-nested":           strings.Replace(runJSON, `"tinker_path": "tinker://run-1:train:0/sampler_weights/final",`, "", 1),
		"/api/v1/training_runs/wrong-type":           strings.Replace(runJSON, `"is_lora": true`, `"is_lora": "yes"`, 1),
		"/api/v1/training_runs/bad-kind/checkpoints": `{"checkpoints": [` + strings.Replace(checkpointJSON, `"checkpoint_type": "sampler"`, `"checkpoint_type": "weights"`, 1) + `]}`,
		"/api/v1/training_runs/no-list/checkpoints":  `{"cursor": null}`,
		"/api/v1/training_runs/not-json/checkpoints": `<html>oops</html>`,
		"/api/v1/training_runs":                      `{"training_runs": []}`,
	}
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		b, ok := bodies[r.URL.Path]
		if ok {
			writeJSON(w, 200, b)
		}
		return ok
	})
	c, _ := testClient(t, f)
	ctx := ctxT(t)
	check := func(name string, err error, field string) {
		t.Helper()
		if !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("%s: err %v, want a schema error", name, err)
			return
		}
		var se *SchemaError
		if errors.As(err, &se) && !strings.Contains(se.Field, field) {
			t.Errorf("%s: field %q, want %q", name, se.Field, field)
		}
		msg, det := CLIError(err)
		if msg != "API error occurred" || det != "Details: Data returned by API invalid for expected schema." {
			t.Errorf("%s: CLIError = %q, %q", name, msg, det)
		}
	}
	_, err := c.GetTrainingRun(ctx, "missing-owner", "")
	check("missing owner", err, "model_owner")
	_, err = c.GetTrainingRun(ctx, "null-base", "")
	check("null base model", err, "base_model")
	_, err = c.GetTrainingRun(ctx, "bad-nested", "")
	check("nested checkpoint", err, "last_sampler_checkpoint.tinker_path")
	_, err = c.GetTrainingRun(ctx, "wrong-type", "")
	check("wrong type", err, "")
	_, err = c.ListRunCheckpoints(ctx, "bad-kind")
	check("bad kind", err, "checkpoints[0].checkpoint_type")
	_, err = c.ListRunCheckpoints(ctx, "no-list")
	check("no list", err, "checkpoints")
	_, err = c.ListRunCheckpoints(ctx, "not-json")
	check("not json", err, "")
	_, err = c.ListTrainingRuns(ctx, 20, 0, "")
	check("no cursor", err, "cursor")
}

// A certificate the client does not trust cannot become trusted by
// retrying: fail at once with a connection error.
func TestTLSCertificateErrorNotRetried(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshakes are expected
	srv.StartTLS()
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, APIKey: testKey, MaxRetryTime: time.Minute, RetryBaseDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = c.Healthz(ctxT(t))
	var te *TransportError
	if !errors.As(err, &te) || !te.Permanent || !errors.Is(err, ErrConnection) {
		t.Fatalf("err %v, want a permanent connection error", err)
	}
	if el := time.Since(start); el > promptly {
		t.Errorf("certificate error was retried for %v", el)
	}
}

// A refused connection means nothing listens there: a couple of quick
// retries cover a server restarting, then the error comes back instead of
// backing off for the whole retry budget.
func TestConnectionRefusedFailsAfterAFewRetries(t *testing.T) {
	f := newFake(t, nil)
	c, logs := testClient(t, f, func(c *Config) { c.MaxRetryTime = 2 * time.Second })
	f.srv.Close()
	err := c.Healthz(ctxT(t))
	if !errors.Is(err, ErrConnection) {
		t.Fatalf("err %v, want ErrConnection", err)
	}
	if n := strings.Count(logs.String(), "retrying in"); n > maxRefusedRetries {
		t.Errorf("%d retries of a refused connection, want at most %d:\n%s", n, maxRefusedRetries, logs)
	}
}
