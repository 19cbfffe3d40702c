package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/server"
)

// consoleGet signs in to the console at base with key and returns the
// page at path.
func consoleGet(t *testing.T, base, key, path string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	req, _ := http.NewRequest("POST", base+"/console/login", strings.NewReader(url.Values{"api_key": {key}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp, err = hc.Get(base + path); err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("GET %s: %d %v\n%s", path, resp.StatusCode, resp.Header, b)
	}
	return string(b)
}

// tinker serve serves the console beside its API, and draws the loss of
// a step trained through the API: the mean over the weighted tokens.
func TestServeMountsConsole(t *testing.T) {
	t.Setenv(server.KeysEnv, "")
	p := startServe(t, t.TempDir())
	defer p.stop()
	model := p.newModel()
	var fb struct {
		Metrics map[string]float64 `json:"metrics"`
	}
	json.Unmarshal([]byte(p.collect(p.submit("forward_backward", p.fb(model, 1)))), &fb)
	p.collect(p.submit("optim_step", p.optim(model, 2)))
	resp, err := http.Get(p.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `name="api_key"`) || resp.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("/ of tinker serve is not the console's sign-in page:\n%s", b)
	}
	page := consoleGet(t, p.url, "tml-restart-test", "/console/runs/"+url.PathEscape(model))
	// p.fb weighs 4 of its tokens.
	want := fmt.Sprintf(`<span class="last">%s</span>`, strconv.FormatFloat(fb.Metrics["loss:sum"]/4, 'g', 4, 64))
	if !strings.Contains(page, `data-title="loss" data-points="1"`) || !strings.Contains(page, want) {
		t.Fatalf("run page: want a one-point loss chart with %s:\n%s", want, page)
	}
}

// tinker console serves the console against $TINKER_BASE_URL: a user
// signing in sees their runs there.
func TestConsoleCommandUsesTheBackend(t *testing.T) {
	dir := t.TempDir()
	manifest := `{"owner_key": "tml-console-cmd", "runs": [{"id": "cccccccc-0000-5000-8000-000000000001:train:0", "base_model": "tinker-local/tiny-llama"}]}`
	if _, err := server.Import(context.Background(), dir, strings.NewReader(manifest), time.Now()); err != nil {
		t.Fatal(err)
	}
	srv, err := server.Open(server.Options{DataDir: dir, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer func() { hs.Close(); srv.Close() }()
	_, base := startTinker(t, "console --addr 127.0.0.1:0", "open ", "TINKER_BASE_URL="+hs.URL)
	base = strings.TrimSuffix(base, "/")
	if page := consoleGet(t, base, "tml-console-cmd", "/"); !strings.Contains(page, "cccccccc-0000-5000-8000-000000000001:train:0") {
		t.Fatalf("the console's runs page does not list the backend's run:\n%s", page)
	}
}

// tinker --local console serves the console and the local server's API on
// one loopback address; the local user signs in with its key.
func TestLocalConsole(t *testing.T) {
	_, base := startTinker(t, "--local console --addr 127.0.0.1:0", "open ", "XDG_DATA_HOME="+t.TempDir())
	base = strings.TrimSuffix(base, "/")
	if page := consoleGet(t, base, server.LocalUserKey, "/"); !strings.Contains(page, "No training runs yet") {
		t.Fatalf("runs page of a fresh local server:\n%s", page)
	}
	resp, err := http.Get(base + "/api/v1/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != `{"status":"ok"}` {
		t.Errorf("the local server's API on the console's address: %s", b)
	}
}
