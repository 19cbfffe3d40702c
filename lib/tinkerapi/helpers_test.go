package tinkerapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const testKey = "tml-test-0123456789abcdef"

// recorded is one request seen by a fake server.
type recorded struct {
	Method string
	URI    string // path and query as sent
	Header http.Header
	Body   string
}

// fake is a loopback Tinker server whose behaviour each test scripts. It
// answers the handshake itself unless the test handler claims the path.
type fake struct {
	srv          *httptest.Server
	mu           sync.Mutex
	reqs         []recorded
	clientConfig string // body of client/config
	handle       func(w http.ResponseWriter, r *http.Request, n int) bool
}

func newFake(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, n int) bool) *fake {
	t.Helper()
	f := &fake{clientConfig: "{}", handle: handle}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{r.Method, r.RequestURI, r.Header.Clone(), string(body)})
	n := 0
	for _, q := range f.reqs {
		if q.Method == r.Method && q.URI == r.RequestURI {
			n++
		}
	}
	cc := f.clientConfig
	f.mu.Unlock()
	if f.handle != nil && f.handle(w, r, n) {
		return
	}
	switch r.URL.Path {
	case "/api/v1/client/config":
		writeJSON(w, 200, cc)
	case "/api/v1/client/dynamic_config":
		writeJSON(w, 404, `{"detail":"Not Found"}`)
	default:
		writeJSON(w, 404, `{"detail":"Not Found"}`)
	}
}

// count returns how many requests had this path (query ignored).
func (f *fake) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, q := range f.reqs {
		if strings.SplitN(q.URI, "?", 2)[0] == path {
			n++
		}
	}
	return n
}

// requests returns the requests to path (query ignored), in order.
func (f *fake) requests(path string) []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []recorded
	for _, q := range f.reqs {
		if strings.SplitN(q.URI, "?", 2)[0] == path {
			out = append(out, q)
		}
	}
	return out
}

func (f *fake) all() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// logBuf collects Logf lines.
type logBuf struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBuf) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// testClient returns a client for f with fast retry timings.
func testClient(t *testing.T, f *fake, mods ...func(*Config)) (*Client, *logBuf) {
	t.Helper()
	logs := &logBuf{}
	cfg := Config{
		BaseURL:        f.srv.URL,
		APIKey:         testKey,
		MaxRetryTime:   3 * time.Second,
		RequestTimeout: 5 * time.Second,
		RetryBaseDelay: 2 * time.Millisecond,
		RetryMaxDelay:  20 * time.Millisecond,
		Logf:           logs.logf,
	}
	for _, m := range mods {
		m(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, logs
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

const checkpointJSON = `{"checkpoint_id": "sampler_weights/final", "checkpoint_type": "sampler",
 "time": "2025-12-27T08:51:24.966034Z",
 "tinker_path": "tinker://run-1:train:0/sampler_weights/final",
 "size_bytes": 176264704, "public": false, "expires_at": null}`

const runJSON = `{"training_run_id": "run-1:train:0", "base_model": "meta-llama/Llama-3.1-8B",
 "model_owner": "tml:organization_user:274df404", "is_lora": true, "lora_rank": 16,
 "corrupted": false, "last_request_time": "2025-12-27T08:52:03.361867Z",
 "last_checkpoint": null, "last_sampler_checkpoint": ` + checkpointJSON + `,
 "user_metadata": {"experiment": "demo"}}`
