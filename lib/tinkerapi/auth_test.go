package tinkerapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// makeJWT builds an unsigned JWT with the given expiry; the SDK and this
// client only read the claims.
func makeJWT(exp time.Time, sub string, serial int) string {
	claims, _ := json.Marshal(map[string]any{"exp": exp.Unix(), "sub": sub, "email": "", "n": serial})
	return "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString(claims) + ".sig"
}

// jwtServer is a fake with pjwt auth: auth/token mints tokens valid for
// ttl, every other endpoint insists on the newest token.
type jwtServer struct {
	*fake
	mu        sync.Mutex
	issued    []string
	ttl       time.Duration
	failAfter int    // auth/token calls beyond this many answer 401
	wantRaw   string // credential auth/token expects
}

func newJWTServer(t *testing.T, ttl time.Duration) *jwtServer {
	s := &jwtServer{ttl: ttl, failAfter: 1 << 30, wantRaw: testKey}
	s.fake = newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		key := r.Header.Get("X-API-Key")
		s.mu.Lock()
		defer s.mu.Unlock()
		switch r.URL.Path {
		case "/api/v1/client/config":
			return false
		case "/api/v1/auth/token":
			if key != s.wantRaw || r.Method != "POST" {
				writeJSON(w, 401, `{"detail":"bad credential"}`)
				return true
			}
			if len(s.issued) >= s.failAfter {
				writeJSON(w, 401, `{"detail":"token service refuses"}`)
				return true
			}
			tok := makeJWT(time.Now().Add(s.ttl), "tml:organization_user:u-1", len(s.issued))
			s.issued = append(s.issued, tok)
			writeJSON(w, 200, fmt.Sprintf(`{"jwt": %q}`, tok))
			return true
		}
		if len(s.issued) == 0 || key != s.issued[len(s.issued)-1] && !(s.failAfter < 1<<30 && isIssued(s.issued, key)) {
			writeJSON(w, 401, `{"detail":"Invalid JWT"}`)
			return true
		}
		if r.URL.Path == "/api/v1/client/dynamic_config" {
			writeJSON(w, 200, `{"refresh_interval_sec": 300}`)
		} else {
			writeJSON(w, 200, `{"status":"ok"}`)
		}
		return true
	})
	s.clientConfig = `{"pjwt_auth_enabled": true}`
	return s
}

func isIssued(list []string, tok string) bool {
	for _, x := range list {
		if x == tok {
			return true
		}
	}
	return false
}

func (s *jwtServer) tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.issued...)
}

func TestJWTExchange(t *testing.T) {
	s := newJWTServer(t, time.Hour)
	c, _ := testClient(t, s.fake)
	for range 3 {
		if err := c.Healthz(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	toks := s.tokens()
	if len(toks) != 1 {
		t.Fatalf("%d tokens minted, want 1", len(toks))
	}
	if r := s.requests("/api/v1/auth/token"); r[0].Body != "{}" || r[0].Header.Get("X-API-Key") != testKey {
		t.Errorf("auth/token request: body %q", r[0].Body)
	}
	for _, r := range s.requests("/api/v1/healthz") {
		if r.Header.Get("X-API-Key") != toks[0] {
			t.Errorf("healthz sent without the JWT")
		}
	}
	if r := s.requests("/api/v1/client/dynamic_config"); len(r) != 1 || r[0].Header.Get("X-API-Key") != toks[0] {
		t.Errorf("dynamic config should use the JWT")
	}
	who, err := c.Whoami(ctxT(t))
	if err != nil || who.Sub != "tml:organization_user:u-1" {
		t.Errorf("Whoami = %+v, %v", who, err)
	}
}

func TestJWTRefreshOnDemand(t *testing.T) {
	s := newJWTServer(t, 30*time.Second) // always inside the 60 s must-refresh window
	c, _ := testClient(t, s.fake)
	for range 3 {
		if err := c.Healthz(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	toks := s.tokens()
	if len(toks) != 4 { // handshake + one refresh before each call
		t.Fatalf("%d tokens minted, want 4", len(toks))
	}
	for i, r := range s.requests("/api/v1/healthz") {
		if r.Header.Get("X-API-Key") != toks[i+1] {
			t.Errorf("call %d did not use a fresh token", i)
		}
	}
	// When a due refresh fails, the call fails with the server's answer.
	s.mu.Lock()
	s.failAfter = len(s.issued)
	s.mu.Unlock()
	err := c.Healthz(ctxT(t))
	if msg, _ := CLIError(err); msg != "Authentication failed" {
		t.Errorf("failed refresh: err %v → %q", err, msg)
	}
}

func TestJWTProactiveRefreshFailureKeepsToken(t *testing.T) {
	s := newJWTServer(t, 200*time.Second) // inside the 300 s refresh window
	s.failAfter = 1
	c, logs := testClient(t, s.fake)
	for range 3 {
		if err := c.Healthz(ctxT(t)); err != nil {
			t.Fatalf("old token should still be used: %v", err)
		}
	}
	if n := s.count("/api/v1/auth/token"); n != 2 {
		t.Errorf("auth/token called %d times, want 2 (exchange, one failed refresh, then back off)", n)
	}
	tok := s.tokens()[0]
	for _, r := range s.requests("/api/v1/healthz") {
		if r.Header.Get("X-API-Key") != tok {
			t.Errorf("request not sent with the existing token")
		}
	}
	if l := logs.String(); !strings.Contains(l, "JWT refresh failed") || strings.Contains(l, tok) {
		t.Errorf("log should report the failed refresh without the token:\n%s", l)
	}
}

func TestSuppliedJWTUsedAsIs(t *testing.T) {
	s := newJWTServer(t, time.Hour)
	c, _ := testClient(t, s.fake, func(c *Config) { c.APIKey = makeJWT(time.Now().Add(time.Hour), "x", 99) })
	s.mu.Lock()
	s.issued = append(s.issued, c.cfg.APIKey)
	s.mu.Unlock()
	if err := c.Healthz(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if n := s.count("/api/v1/auth/token"); n != 0 {
		t.Errorf("a supplied JWT was exchanged (%d calls)", n)
	}
}

func TestCredentialCmd(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.URL.Path == "/api/v1/healthz" {
			writeJSON(w, 200, `{"status":"ok"}`)
			return true
		}
		return false
	})
	c, _ := testClient(t, f, func(c *Config) { c.APIKey, c.CredentialCmd = "", `printf '  tml-from-cmd \n'` })
	if err := c.Healthz(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.all() {
		if r.Header.Get("X-API-Key") != "tml-from-cmd" {
			t.Errorf("%s sent X-API-Key %q, want the trimmed command output", r.URI, r.Header.Get("X-API-Key"))
		}
	}
}

func TestCredentialCmdForJWTExchange(t *testing.T) {
	dir := t.TempDir()
	countFile := filepath.Join(dir, "runs")
	s := newJWTServer(t, 30*time.Second)
	s.clientConfig = `{"pjwt_auth_enabled": true, "credential_default_source": "credential_cmd"}`
	s.wantRaw = "tml-cmd-cred"
	c, _ := testClient(t, s.fake, func(c *Config) {
		c.CredentialCmd = fmt.Sprintf("echo run >> %q; echo tml-cmd-cred", countFile)
	})
	for range 2 {
		if err := c.Healthz(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	if r := s.requests("/api/v1/client/config"); r[0].Header.Get("X-API-Key") != testKey {
		t.Errorf("client/config should use the API key")
	}
	runs, _ := os.ReadFile(countFile)
	if n, toks := strings.Count(string(runs), "run"), len(s.tokens()); n != toks || n != 3 {
		t.Errorf("credential command ran %d times for %d exchanges, want 3 and 3", n, toks)
	}
}

func TestCredentialCmdFailureHidesOutput(t *testing.T) {
	f := newFake(t, nil)
	c, _ := testClient(t, f, func(c *Config) {
		c.APIKey = ""
		c.CredentialCmd = `echo tml-leaked-secret; echo "login failed for tml-leaked-secret eyJother.tok.en" >&2; exit 3`
	})
	err := c.Healthz(ctxT(t))
	var ce *CredentialError
	if !errors.As(err, &ce) {
		t.Fatalf("err %v, want *CredentialError", err)
	}
	msg, det := CLIError(err)
	for _, s := range []string{err.Error(), msg, det} {
		if strings.Contains(s, "leaked-secret") || strings.Contains(s, "eyJother") {
			t.Errorf("credential leaked: %q", s)
		}
	}
	if !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "login failed for") {
		t.Errorf("error should say what failed: %q", err)
	}
	if !strings.HasPrefix(msg, "Failed to connect to Tinker API: TINKER_CREDENTIAL_CMD failed") {
		t.Errorf("CLIError message %q", msg)
	}
	if len(f.all()) != 0 {
		t.Error("requests sent without a credential")
	}
}

func TestSecretsNeverInErrorsOrLogs(t *testing.T) {
	t.Run("api-key", func(t *testing.T) { checkNoLeaks(t, false) })
	t.Run("jwt", func(t *testing.T) { checkNoLeaks(t, true) })
}

func checkNoLeaks(t *testing.T, jwt bool) {
	s := newJWTServer(t, time.Hour)
	if !jwt {
		s.clientConfig = "{}"
		s.issued = []string{testKey}
	}
	echo := func(w http.ResponseWriter, r *http.Request, n int) bool {
		key := r.Header.Get("X-API-Key")
		switch r.URL.Path {
		case "/api/v1/training_runs/json":
			writeJSON(w, 404, fmt.Sprintf(`{"detail": "no run for key %s"}`, key))
		case "/api/v1/training_runs/text":
			w.WriteHeader(500)
			fmt.Fprintf(w, "internal error handling %s", key)
		case "/api/v1/training_runs/cps/checkpoints":
			writeJSON(w, 200, fmt.Sprintf(`{"checkpoints": [{"checkpoint_id": %q}]}`, key))
		case "/api/v1/training_runs/time/checkpoints":
			writeJSON(w, 200, `{"checkpoints": [`+strings.Replace(checkpointJSON, "2025-12-27T08:51:24.966034Z", key, 1)+`]}`)
		default:
			return false
		}
		return true
	}
	inner := s.fake.handle
	s.fake.handle = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if echo(w, r, n) {
			return true
		}
		return inner(w, r, n)
	}
	c, logs := testClient(t, s.fake, func(c *Config) { c.MaxRetryTime = 50 * time.Millisecond })
	ctx := ctxT(t)
	var errs []error
	_, err := c.GetTrainingRun(ctx, "json", "")
	errs = append(errs, err)
	_, err = c.GetTrainingRun(ctx, "text", "")
	errs = append(errs, err)
	_, err = c.ListRunCheckpoints(ctx, "cps")
	errs = append(errs, err)
	_, err = c.ListRunCheckpoints(ctx, "time")
	errs = append(errs, err)
	secrets := append([]string{testKey}, s.tokens()...)
	var texts []string
	for _, err := range errs {
		if err == nil {
			t.Fatal("expected an error")
		}
		msg, det := CLIError(err)
		texts = append(texts, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err), msg, det)
		var apiErr *APIError
		if errors.As(err, &apiErr) {
			texts = append(texts, string(apiErr.Body), apiErr.Detail())
		}
	}
	texts = append(texts, logs.String())
	for _, text := range texts {
		for _, sec := range secrets {
			if strings.Contains(text, sec) {
				t.Errorf("secret %.8s… leaked in %q", sec, text)
			}
		}
	}
	if !strings.Contains(errs[0].Error(), "no run for key [REDACTED]") {
		t.Errorf("redacted message should keep the rest of the text: %q", errs[0])
	}
}

// A token service may hand out the same JWT again; scrubbing must not turn
// the credential itself into "[REDACTED]".
func TestJWTReissuedUnchanged(t *testing.T) {
	tok := makeJWT(time.Now().Add(30*time.Second), "u", 0)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		switch r.URL.Path {
		case "/api/v1/auth/token":
			writeJSON(w, 200, fmt.Sprintf(`{"jwt": %q}`, tok))
		case "/api/v1/healthz":
			if r.Header.Get("X-API-Key") != tok {
				writeJSON(w, 401, `{"detail":"Invalid JWT"}`)
			} else {
				writeJSON(w, 200, `{"status":"ok"}`)
			}
		default:
			return false
		}
		return true
	})
	f.clientConfig = `{"pjwt_auth_enabled": true}`
	c, _ := testClient(t, f)
	for range 2 {
		if err := c.Healthz(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.count("/api/v1/auth/token"); n != 3 {
		t.Errorf("auth/token called %d times, want 3", n)
	}
}
