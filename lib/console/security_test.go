package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Without a session the root is the sign-in page and shows no data; every
// other page answers 401 with nothing about any run.
func TestNoSessionShowsNothing(t *testing.T) {
	f := startServer(t, manifest)
	b := newBrowser(t, f.URL)
	resp, body := b.do("GET", "/", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `name="api_key"`) || !strings.Contains(body, `action="/console/login"`) {
		t.Fatalf("/ without a session: %d, want the sign-in form:\n%s", resp.StatusCode, body)
	}
	paths := []string{"/", "/console/", "/console/runs-table", "/console/runs/" + url.PathEscape(aliceRun), "/console/runs/" + url.PathEscape(aliceRun) + "/charts",
		"/console/runs/" + url.PathEscape(aliceRun) + "/checkpoints/weights/0001/download", "/console/logs", "/console/logs/0", "/console/playground"}
	for _, p := range paths {
		resp, body := b.do("GET", p, nil)
		if strings.Contains(body, "aaaaaaaa") || strings.Contains(body, "0001") || strings.Contains(body, "tiny-llama") || strings.Contains(body, `name="csrf"`) {
			t.Errorf("GET %s without a session shows data (%d):\n%s", p, resp.StatusCode, body)
		}
		if p != "/" && p != "/console/" && resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a session: %d, want 401", p, resp.StatusCode)
		}
	}
	resp, _ = b.do("POST", "/console/runs/"+url.PathEscape(aliceRun)+"/checkpoints/weights/0001/publish", url.Values{"csrf": {"x"}})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("publish without a session: %d, want 401", resp.StatusCode)
	}
}

// Every console response, pages, errors and static files alike, carries
// the strict policy; the API's responses are the API's own.
func TestEveryResponseHasCSP(t *testing.T) {
	f := startServer(t, manifest)
	b := newBrowser(t, f.URL)
	b.signIn(aliceKey)
	for _, p := range []string{"/", "/console/", "/console/runs/" + url.PathEscape(aliceRun), "/console/runs/nope", "/console/logs", "/console/logs/7",
		"/console/playground", "/console/static/console.css", "/console/static/console.js", "/console/static/missing", "/console/nothing"} {
		resp, _ := b.do("GET", p, nil)
		got := resp.Header.Get("Content-Security-Policy")
		if got != csp || !strings.Contains(got, "script-src 'self'") || strings.Contains(got, "unsafe") {
			t.Errorf("GET %s (%d): Content-Security-Policy %q", p, resp.StatusCode, got)
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: missing frame or sniffing protection: %v", p, resp.Header)
		}
	}
	resp, body := b.do("GET", "/api/v1/healthz", nil)
	if resp.StatusCode != 200 || body != `{"status":"ok"}` || resp.Header.Get("Content-Security-Policy") != "" {
		t.Errorf("the API's healthz changed under the console: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = b.do("GET", "/api/v1/training_runs", nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "X-API-Key") {
		t.Errorf("the API must still want its key (a console cookie is not one): %d %s", resp.StatusCode, body)
	}
}

// Sign-in answers an HttpOnly, SameSite=Strict cookie that is not the
// key; the key appears in no page, header or URL; a wrong key gets no
// cookie and is not echoed.
func TestSignInCookieAndKeyNeverShown(t *testing.T) {
	f := startServer(t, manifest)
	b := newBrowser(t, f.URL)
	resp, body := b.do("POST", "/console/login", url.Values{"api_key": {"tml-wrong-key-123"}})
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 || strings.Contains(body, "tml-wrong-key-123") || !strings.Contains(body, "not accepted") {
		t.Fatalf("wrong key: %d cookies %v:\n%s", resp.StatusCode, resp.Cookies(), body)
	}
	resp, body = b.do("POST", "/console/login", url.Values{"api_key": {aliceKey}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("sign-in: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	cks := resp.Cookies()
	if len(cks) != 1 || !cks[0].HttpOnly || cks[0].SameSite != http.SameSiteStrictMode || strings.Contains(cks[0].Value, aliceKey) || len(cks[0].Value) < 40 {
		t.Fatalf("session cookie %+v: want one HttpOnly SameSite=Strict random value", cks)
	}
	for _, p := range []string{"/", "/console/runs/" + url.PathEscape(aliceRun), "/console/playground", "/console/logs"} {
		resp, body := b.do("GET", p, nil)
		if resp.StatusCode != 200 || strings.Contains(body, aliceKey) || strings.Contains(resp.Header.Get("Location"), aliceKey) {
			t.Errorf("GET %s: %d, or it shows the key", p, resp.StatusCode)
		}
	}
	tok := b.csrf()
	resp, _ = b.do("POST", "/console/logout", url.Values{"csrf": {tok}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	if _, body := b.do("GET", "/", nil); !strings.Contains(body, `name="api_key"`) || strings.Contains(body, "aaaaaaaa") {
		t.Fatalf("after logout / still shows data:\n%s", body)
	}
	// The old cookie is dead on the server too, not only in this jar.
	again := newBrowser(t, f.URL)
	again.hc.Jar.SetCookies(mustURL(f.URL), cks)
	if resp, _ := again.do("GET", "/console/runs/"+url.PathEscape(aliceRun), nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the cookie of an ended session still works: %d", resp.StatusCode)
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// A state-changing POST needs the session's CSRF token and the console's
// own origin; refused ones change nothing.
func TestCSRFRefused(t *testing.T) {
	f := startServer(t, manifest)
	b := newBrowser(t, f.URL)
	b.signIn(aliceKey)
	tok := b.csrf()
	publish := "/console/runs/" + url.PathEscape(aliceRun) + "/checkpoints/weights/0001/publish"
	cases := []struct {
		name   string
		form   url.Values
		header []string
	}{
		{"no token", url.Values{}, nil},
		{"wrong token", url.Values{"csrf": {tok[:len(tok)-1] + "x"}}, nil},
		{"other origin", url.Values{"csrf": {tok}}, []string{"Origin", "http://evil.example"}},
	}
	for _, c := range cases {
		resp, body := b.do("POST", publish, c.form, c.header...)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403: %s", c.name, resp.StatusCode, body)
		}
	}
	if public(t, f, aliceKey, aliceRun, "weights/0001") {
		t.Fatal("a refused POST published the checkpoint")
	}
	resp, body := b.do("POST", publish, url.Values{"csrf": {tok}})
	if resp.StatusCode != http.StatusSeeOther || !public(t, f, aliceKey, aliceRun, "weights/0001") {
		t.Fatalf("publish with the token: %d %s", resp.StatusCode, body)
	}
	if resp, _ := b.do("POST", "/console/login", url.Values{"api_key": {aliceKey}}, "Origin", "http://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-in from another origin: %d, want 403", resp.StatusCode)
	}
}

// public reports whether a checkpoint is public, asking the API.
func public(t *testing.T, f *fixture, key, run, id string) bool {
	t.Helper()
	resp, err := f.apiClient(t, key).ListRunCheckpoints(t.Context(), run)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range resp.Checkpoints {
		if c.CheckpointID == id {
			return c.Public
		}
	}
	t.Fatalf("no checkpoint %s in %s", id, run)
	return false
}

// Another user's run is invisible: not listed, its pages answer 404 like
// a missing run, and actions on its checkpoints change nothing.
func TestOtherUsersRunsInvisible(t *testing.T) {
	f := startServer(t, manifest)
	b := newBrowser(t, f.URL)
	b.signIn(aliceKey)
	if _, body := b.do("GET", "/", nil); !strings.Contains(body, aliceRun) || strings.Contains(body, "bbbbbbbb") {
		t.Fatalf("alice's runs page:\n%s", body)
	}
	bob := "/console/runs/" + url.PathEscape(bobRun)
	for _, p := range []string{bob, bob + "/charts", bob + "/checkpoints/weights/secret/download", bob + "/checkpoints/weights/secret/delete"} {
		resp, body := b.do("GET", p, nil)
		if resp.StatusCode != http.StatusNotFound || strings.Contains(body, "secret") {
			t.Errorf("GET %s as alice: %d, want 404 with nothing of bob's:\n%s", p, resp.StatusCode, body)
		}
	}
	tok := b.csrf()
	for _, action := range []string{"publish", "delete"} {
		if resp, _ := b.do("POST", bob+"/checkpoints/weights/secret/"+action, url.Values{"csrf": {tok}}); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s of bob's checkpoint as alice: %d, want 404", action, resp.StatusCode)
		}
	}
	if public(t, f, bobKey, bobRun, "weights/secret") {
		t.Error("alice published bob's checkpoint")
	}
}

// Only loopback clients, and only loopback Host names (against DNS
// rebinding), reach the console by default.
func TestLoopbackOnly(t *testing.T) {
	c, err := New(Options{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Handler()
	for _, tc := range []struct {
		remote, host string
		want         int
	}{
		{"192.0.2.1:1234", "127.0.0.1:8000", http.StatusForbidden},
		{"127.0.0.1:1234", "evil.example:8000", http.StatusForbidden},
		{"127.0.0.1:1234", "127.0.0.1:8000", http.StatusOK},
		{"[::1]:1234", "localhost:8000", http.StatusOK},
		{"[::1]:1234", "[::1]:8000", http.StatusOK},
	} {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr, req.Host = tc.remote, tc.host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want || rec.Header().Get("Content-Security-Policy") != csp {
			t.Errorf("client %s, Host %s: %d, want %d (with the policy)", tc.remote, tc.host, rec.Code, tc.want)
		}
	}
}

// The playground refuses bad input before any call, with one line, and
// shows the posted text back escaped.
func TestPlaygroundBoundsAndEscapes(t *testing.T) {
	f := startServer(t, manifest)
	b := newBrowser(t, f.URL)
	b.signIn(aliceKey)
	tok := b.csrf()
	evil := "</textarea><script>alert(1)</script>"
	for _, c := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"model": {"tinker-local/tiny-llama"}, "message": {evil}, "temperature": {"9"}, "max_tokens": {"8"}}, "Temperature must be a number from 0 to 5."},
		{url.Values{"model": {"tinker-local/tiny-llama"}, "message": {evil}, "temperature": {"0"}, "max_tokens": {"100000"}}, "Max tokens must be a whole number from 1 to 2048."},
		{url.Values{"model": {"tinker-local/tiny-llama"}, "message": {" "}, "temperature": {"0"}, "max_tokens": {"8"}}, "Write a message"},
	} {
		c.form.Set("csrf", tok)
		resp, body := b.do("POST", "/console/playground", c.form)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, c.want) || strings.Contains(body, "<script>alert") {
			t.Errorf("%v: %d, want 400 saying %q with the text escaped:\n%s", c.form, resp.StatusCode, c.want, body)
		}
	}
}

// A session ends after 12 h unused, and the least recently used one ends
// when a 65th signs in.
func TestSessionsEnd(t *testing.T) {
	f := startServer(t, manifest)
	now := time.Now()
	con, err := New(Options{BaseURL: f.URL, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(con.Handler())
	defer hs.Close()
	run := "/console/runs/" + url.PathEscape(aliceRun)
	idle := newBrowser(t, hs.URL)
	idle.signIn(aliceKey)
	now = now.Add(sessionIdle + time.Minute)
	if resp, _ := idle.do("GET", run, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a session unused for 12 h still works: %d", resp.StatusCode)
	}
	var bs []*browser
	for i := 0; i <= maxSessions; i++ {
		b := newBrowser(t, hs.URL)
		b.signIn(aliceKey)
		bs = append(bs, b)
		now = now.Add(time.Second)
	}
	if resp, _ := bs[0].do("GET", run, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the oldest of %d sessions still works: %d", maxSessions+1, resp.StatusCode)
	}
	if resp, _ := bs[maxSessions].do("GET", run, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the newest session is refused: %d", resp.StatusCode)
	}
}
