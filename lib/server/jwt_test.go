package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// TestJWTExchange (issue 22, item 5): with Options.JWT the server offers
// the JWT exchange; the repository's client takes it up, whoami reports
// the key's user, and every call runs on the token. A tampered or expired
// token is a 401; the token survives a restart on the same data (the
// secret is a 0600 file there); a JWT is not traded for another.
func TestJWTExchange(t *testing.T) {
	e := newEnv(t, "", Options{JWT: true})
	e.clk.Add(time.Since(t0)) // tokens expire on the server's clock; the client refreshes on the real one
	c, err := tinkerapi.New(tinkerapi.Config{BaseURL: e.url, APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	who, err := c.Whoami(ctx)
	if err != nil {
		t.Fatalf("whoami: %v", err)
	}
	if who.Sub != OwnerURN(key) || who.Iss != jwtIssuer || time.Until(time.Unix(int64(who.Exp), 0)) < 50*time.Minute {
		t.Errorf("claims %+v, want sub %s, iss %s, an hour to live", who, OwnerURN(key), jwtIssuer)
	}
	if _, err := c.ListTrainingRuns(ctx, 10, 0, ""); err != nil {
		t.Fatalf("a REST call on the JWT: %v", err)
	}
	code, b, _ := e.do("POST", "/api/v1/auth/token", map[string]any{})
	if code != 200 || !strings.Contains(string(b), `"jwt":"eyJ`) {
		t.Fatalf("auth/token = %d %s", code, b)
	}
	tok := string(b[strings.Index(string(b), "eyJ") : len(b)-len(`"}`)])
	if code, b, _ := e.do("GET", "/api/v1/training_runs", nil, "X-API-Key", tok); code != 200 {
		t.Errorf("token in X-API-Key = %d %s", code, b)
	}
	if code, b, _ := e.do("POST", "/api/v1/auth/token", map[string]any{}, "X-API-Key", tok); code != 400 {
		t.Errorf("a JWT traded for another = %d %s", code, b)
	}
	parts := strings.Split(tok, ".")
	forged := parts[0] + "." + strings.TrimRight(parts[1], "A") + "B." + parts[2]
	if code, b, _ := e.do("GET", "/api/v1/training_runs", nil, "X-API-Key", forged); code != 401 || !strings.Contains(string(b), "Invalid JWT") {
		t.Errorf("tampered token = %d %s", code, b)
	}
	fi, err := os.Stat(filepath.Join(e.dir, jwtSecretFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v %v", fi, err)
	}
	e.srv.Close()
	s2, err := Open(Options{DataDir: e.dir, Now: e.clk.Now, SweepInterval: -1, JWT: true})
	if err != nil {
		t.Fatal(err)
	}
	e.restart(s2)
	if code, b, _ := e.do("GET", "/api/v1/training_runs", nil, "X-API-Key", tok); code != 200 {
		t.Errorf("token after a restart = %d %s", code, b)
	}
	e.clk.Add(time.Hour)
	if code, b, _ := e.do("GET", "/api/v1/training_runs", nil, "X-API-Key", tok); code != 401 || !strings.Contains(string(b), "expired") {
		t.Errorf("expired token = %d %s", code, b)
	}
}

// Without the option nothing changes: client/config says no JWT,
// auth/token is a 404 saying how to turn it on, whoami says it needs JWT
// auth, and keys of a key-restricted server still gate the exchange.
func TestJWTExchangeOff(t *testing.T) {
	e := newEnv(t, "", Options{})
	code, b, _ := e.do("POST", "/api/v1/client/config", map[string]any{"sdk_version": "0.25.0"})
	if code != 200 || !strings.Contains(string(b), `"pjwt_auth_enabled":false`) {
		t.Errorf("client/config = %d %s", code, b)
	}
	if code, b, _ := e.do("POST", "/api/v1/auth/token", map[string]any{}); code != 404 || !strings.Contains(string(b), "--jwt") {
		t.Errorf("auth/token = %d %s", code, b)
	}
	c, _ := tinkerapi.New(tinkerapi.Config{BaseURL: e.url, APIKey: key})
	if _, err := c.Whoami(context.Background()); err == nil || !strings.Contains(err.Error(), "needs JWT auth") {
		t.Errorf("whoami: %v", err)
	}
	locked := newEnv(t, "", Options{JWT: true, APIKeys: []string{"tml-other"}})
	if code, _, _ := locked.do("POST", "/api/v1/auth/token", map[string]any{}); code != 401 {
		t.Errorf("auth/token with a key the server does not accept = %d", code)
	}
}

// TestJWTBoundToKeys (issue 31, item 9): a token for key A stops working
// once the server restarts accepting only key B, instead of living out
// its hour; B's token works, and A's works again when A is back.
func TestJWTBoundToKeys(t *testing.T) {
	const keyA, keyB = "tml-key-a-0123456789", "tml-key-b-0123456789"
	e := newEnv(t, "", Options{JWT: true, APIKeys: []string{keyA, keyB}})
	token := func(k string) string {
		t.Helper()
		code, b, _ := e.do("POST", "/api/v1/auth/token", map[string]any{}, "X-API-Key", k)
		if code != 200 {
			t.Fatalf("auth/token = %d %s", code, b)
		}
		return string(b[strings.Index(string(b), "eyJ") : len(b)-len(`"}`)])
	}
	tokA, tokB := token(keyA), token(keyB)
	if strings.Contains(tokA, keyA) {
		t.Fatal("the token holds the key")
	}
	reopen := func(keys ...string) {
		e.srv.Close()
		s, err := Open(Options{DataDir: e.dir, Now: e.clk.Now, SweepInterval: -1, JWT: true, APIKeys: keys})
		if err != nil {
			t.Fatal(err)
		}
		e.restart(s)
	}
	reopen(keyB)
	if code, b, _ := e.do("GET", "/api/v1/training_runs", nil, "X-API-Key", tokA); code != 401 || !strings.Contains(string(b), "no longer accepted") {
		t.Errorf("token of a revoked key = %d %s, want 401", code, b)
	}
	if code, b, _ := e.do("GET", "/api/v1/training_runs", nil, "X-API-Key", tokB); code != 200 {
		t.Errorf("token of a key in force = %d %s", code, b)
	}
	reopen(keyA)
	if code, b, _ := e.do("GET", "/api/v1/training_runs", nil, "X-API-Key", tokA); code != 200 {
		t.Errorf("token of a key accepted again = %d %s", code, b)
	}
}

// TestJWTSecretFileChecked (issue 31, item 26): a jwt-secret others can
// read, or one that is all zeros, is refused at start with a line saying
// what to do; the server creates the file 0600 itself.
func TestJWTSecretFileChecked(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, jwtSecretFile)
	good := "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
	for _, c := range []struct {
		content string
		mode    os.FileMode
		want    string
	}{
		{good, 0o644, "can be read by other users (mode 0644)"},
		{strings.Repeat("00", 32) + "\n", 0o600, "anyone could guess"},
		{good, 0o600, ""},
	} {
		os.Remove(p)
		if err := os.WriteFile(p, []byte(c.content), c.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, c.mode)
		s, err := Open(Options{DataDir: dir, SweepInterval: -1, JWT: true})
		if c.want == "" {
			if err != nil {
				t.Errorf("a good secret: %v", err)
			} else {
				s.Close()
			}
			continue
		}
		if err == nil {
			s.Close()
			t.Errorf("secret %q mode %04o accepted", c.content[:8], c.mode)
		} else if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "delete it") {
			t.Errorf("secret %q mode %04o: %v, want %q and what to do", c.content[:8], c.mode, err, c.want)
		}
	}
}
