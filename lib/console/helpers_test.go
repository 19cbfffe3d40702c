package console

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/server"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Two users of one server: alice and bob.
const (
	aliceKey = "tml-console-alice"
	bobKey   = "tml-console-bob"
)

// manifest gives alice one run with two checkpoints and bob one run.
const manifest = `{"runs": [
 {"id": "aaaaaaaa-0000-5000-8000-000000000001:train:0", "base_model": "tinker-local/tiny-llama", "lora_rank": 4, "owner_key": "tml-console-alice",
  "checkpoints": [{"kind": "weights", "name": "0001", "time": "2026-07-01T11:00:00Z"},
                  {"kind": "sampler_weights", "name": "final", "time": "2026-07-01T12:00:00Z"}]},
 {"id": "bbbbbbbb-0000-5000-8000-000000000001:train:0", "base_model": "tinker-local/tiny-llama", "lora_rank": 4, "owner_key": "tml-console-bob",
  "checkpoints": [{"kind": "weights", "name": "secret", "time": "2026-07-01T11:00:00Z"}]}
]}`

const (
	aliceRun = "aaaaaaaa-0000-5000-8000-000000000001:train:0"
	bobRun   = "bbbbbbbb-0000-5000-8000-000000000001:train:0"
)

// fixture is a local server on loopback with the console mounted, as
// tinker serve runs it.
type fixture struct {
	URL     string
	Console *Console
	Server  *server.Server
}

// startServer imports manifest (if any) into a fresh data directory and
// serves it with the console, accepting only the given keys.
func startServer(t testing.TB, manifest string, logDirs ...string) *fixture {
	t.Helper()
	dir := t.TempDir()
	if manifest != "" {
		if _, err := server.Import(context.Background(), dir, strings.NewReader(manifest), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	con, err := New(Options{BaseURL: base, LogDirs: logDirs})
	if err != nil {
		t.Fatal(err)
	}
	pool := &engine.Pool{}
	srv, err := server.Open(server.Options{DataDir: dir, APIKeys: []string{aliceKey, bobKey}, SweepInterval: -1,
		Sampler: server.EngineSampler(pool), Engine: pool, Wrap: con.Wrap, OnTrain: con.Curves().OnTrain, PollHold: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go srv.Serve(ctx, ln)
	t.Cleanup(func() { cancel(); srv.Close() })
	return &fixture{URL: base, Console: con, Server: srv}
}

// apiClient is a Tinker API client of the fixture's server.
func (f *fixture) apiClient(t testing.TB, key string) *tinkerapi.Client {
	c, err := tinkerapi.New(tinkerapi.Config{BaseURL: f.URL, APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// browser is a cookie-keeping HTTP client that does not follow redirects
// and sends the Origin a browser sends with the console's forms.
type browser struct {
	t    testing.TB
	base string
	hc   *http.Client
}

func newBrowser(t testing.TB, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request and returns the response with its body read.
func (b *browser) do(method, path string, form url.Values, header ...string) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", b.base)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return resp, string(text)
}

// signIn posts key to /console/login and checks it was accepted.
func (b *browser) signIn(key string) {
	b.t.Helper()
	resp, body := b.do("POST", "/console/login", url.Values{"api_key": {key}})
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("sign-in: %d %s", resp.StatusCode, body)
	}
}

// csrf reads the session's CSRF token from a page.
func (b *browser) csrf() string {
	b.t.Helper()
	_, body := b.do("GET", "/", nil)
	_, rest, ok := strings.Cut(body, `name="csrf" value="`)
	if !ok {
		b.t.Fatalf("no CSRF token on the runs page:\n%s", body)
	}
	tok, _, _ := strings.Cut(rest, `"`)
	return tok
}
