package tinkerapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"time"
)

// ClientConfigResponse holds the feature flags of POST client/config
// (docs/protocol.md, "Authentication"). Only the fields a REST client
// acts on are decoded; the
// raw body is kept for callers that need the rest.
type ClientConfigResponse struct {
	PJWTAuthEnabled         bool   `json:"pjwt_auth_enabled"`
	CredentialDefaultSource string `json:"credential_default_source"`
	// ProtoCompressFwdbwd asks for zstd-compressed forward_backward
	// bodies (Content-Encoding: zstd), as the SDK sends them.
	ProtoCompressFwdbwd bool `json:"proto_compress_fwdbwd"`
	// CancelFuture: the server (tinker serve) takes cancel_future, which
	// the client sends when the caller stops waiting (futures.go).
	CancelFuture bool            `json:"tinker_cancel_future"`
	Raw          json.RawMessage `json:"-"`
}

// JWT refresh timing (docs/protocol.md, "Authentication").
const (
	jwtRefreshBefore  = 300 * time.Second // proactive refresh window
	jwtMustRefresh    = 60 * time.Second  // refresh before sending if this little is left
	jwtRetryAfterFail = 60 * time.Second
)

// authState is the handshake result. lock is a one-slot channel so that
// waiting for another goroutine's handshake can be cancelled.
type authState struct {
	lock      chan struct{}
	ready     bool
	serverCfg ClientConfigResponse
	raw       string    // credential used when no JWT is in play
	jwt       string    // current JWT, if the server wants JWT auth
	exp       time.Time // JWT expiry; zero if unknown (never refreshed)
	nextTry   time.Time // earliest proactive refresh after a failure
}

func (a *authState) init() { a.lock = make(chan struct{}, 1) }

func (a *authState) acquire(ctx context.Context) error {
	select {
	case a.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *authState) release() { <-a.lock }

// ServerConfig returns the server's client/config answer, doing the
// handshake first if needed.
func (c *Client) ServerConfig(ctx context.Context) (ClientConfigResponse, error) {
	if _, err := c.credential(ctx); err != nil {
		return ClientConfigResponse{}, err
	}
	if err := c.auth.acquire(ctx); err != nil {
		return ClientConfigResponse{}, err
	}
	defer c.auth.release()
	return c.auth.serverCfg, nil
}

// credential returns the X-API-Key value for the next request: after the
// handshake, the JWT (refreshed when due) or the raw credential.
func (c *Client) credential(ctx context.Context) (string, error) {
	a := &c.auth
	if err := a.acquire(ctx); err != nil {
		return "", err
	}
	defer a.release()
	if !a.ready {
		if err := c.handshake(ctx); err != nil {
			return "", err
		}
		a.ready = true
	}
	if a.jwt == "" {
		return a.raw, nil
	}
	if a.exp.IsZero() { // no exp claim: nothing to refresh against
		return a.jwt, nil
	}
	left := time.Until(a.exp)
	switch {
	case left <= jwtMustRefresh:
		if err := c.refreshJWT(ctx); err != nil {
			return "", fmt.Errorf("refresh expiring JWT: %w", err)
		}
	case left <= jwtRefreshBefore && !time.Now().Before(a.nextTry):
		if err := c.refreshJWT(ctx); err != nil {
			// The old token is still good for a while; try again later.
			a.nextTry = time.Now().Add(jwtRetryAfterFail)
			c.logf("JWT refresh failed, keeping the current token: %v", err)
		}
	}
	return a.jwt, nil
}

// handshake performs client/config, the optional JWT exchange and
// client/dynamic_config (docs/protocol.md, "Authentication"). Called with
// the auth lock held.
func (c *Client) handshake(ctx context.Context) error {
	a := &c.auth
	raw := c.cfg.APIKey
	if raw == "" {
		var err error
		if raw, err = c.runCredentialCmd(ctx); err != nil {
			return err
		}
	}
	a.raw = raw
	body := map[string]string{"sdk_version": SDKVersion}
	resp, err := c.DoRaw(ctx, http.MethodPost, "/api/v1/client/config", body,
		withCredential(raw), AllowStatus(http.StatusNotFound))
	if err != nil {
		return fmt.Errorf("client config: %w", err)
	}
	var cc ClientConfigResponse
	if resp.Status == http.StatusNotFound {
		// A server without feature flags (an older emulator): all defaults,
		// which means no JWT auth.
		c.logf("POST /api/v1/client/config: 404, using default client config")
	} else {
		if err := json.Unmarshal(resp.Body, &cc); err != nil {
			return c.schemaErr(&SchemaError{Reason: err.Error()}, "/api/v1/client/config")
		}
		cc.Raw = resp.Body
	}
	a.serverCfg = cc
	cred := raw
	if cc.PJWTAuthEnabled {
		if isJWT(c.cfg.APIKey) {
			a.jwt, a.exp = c.cfg.APIKey, jwtExpiry(c.cfg.APIKey)
		} else if err := c.refreshJWT(ctx); err != nil {
			return err
		}
		cred = a.jwt
	}
	_, err = c.DoRaw(ctx, http.MethodPost, "/api/v1/client/dynamic_config", body,
		withCredential(cred), AllowStatus(http.StatusNotFound), WithTimeout(10*time.Second))
	if err != nil {
		return fmt.Errorf("client dynamic config: %w", err)
	}
	return nil
}

// refreshJWT exchanges the credential for a JWT at auth/token. Called with
// the auth lock held.
func (c *Client) refreshJWT(ctx context.Context) error {
	a := &c.auth
	cred := a.raw
	if a.serverCfg.CredentialDefaultSource == "credential_cmd" && c.cfg.CredentialCmd != "" {
		var err error
		if cred, err = c.runCredentialCmd(ctx); err != nil {
			return err
		}
	}
	var tok struct {
		JWT *string `json:"jwt"`
	}
	err := c.Do(ctx, http.MethodPost, "/api/v1/auth/token", map[string]any{}, &tok, withCredential(cred))
	if err != nil {
		return fmt.Errorf("JWT exchange: %w", err)
	}
	if tok.JWT == nil || *tok.JWT == "" {
		return &SchemaError{Path: "/api/v1/auth/token", Field: "jwt", Reason: "missing"}
	}
	c.secrets.add(*tok.JWT)
	a.jwt, a.exp = *tok.JWT, jwtExpiry(*tok.JWT)
	a.nextTry = time.Time{}
	return nil
}

func withCredential(cred string) Option {
	return func(o *callOpts) { o.noAuth, o.credential = true, cred }
}

// JWTClaims are the unverified claims of a Tinker JWT.
type JWTClaims struct {
	Exp   float64 `json:"exp"`
	Sub   string  `json:"sub"`
	Email string  `json:"email"`
	Iss   string  `json:"iss"`
}

// ParseJWTClaims decodes the payload of a JWT without verifying it.
func ParseJWTClaims(token string) (JWTClaims, error) {
	var cl JWTClaims
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return cl, errors.New("malformed JWT: want three dot-separated parts")
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return cl, fmt.Errorf("malformed JWT payload: %w", err)
	}
	if err := json.Unmarshal(payload, &cl); err != nil {
		return cl, fmt.Errorf("malformed JWT claims: %w", err)
	}
	return cl, nil
}

func jwtExpiry(token string) time.Time {
	cl, err := ParseJWTClaims(token)
	if err != nil || cl.Exp <= 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(cl.Exp*float64(time.Second)))
}

// Whoami returns the claims of the JWT in use, computed locally as the SDK
// does. It fails when the server does not use JWT auth.
func (c *Client) Whoami(ctx context.Context) (JWTClaims, error) {
	cred, err := c.credential(ctx)
	if err != nil {
		return JWTClaims{}, err
	}
	if !isJWT(cred) {
		return JWTClaims{}, errors.New("whoami needs JWT auth, which this server does not use")
	}
	return ParseJWTClaims(cred)
}

// runCredentialCmd runs TINKER_CREDENTIAL_CMD with sh -c and returns its
// trimmed stdout. Neither stdout nor stderr goes into the error text
// unredacted: a failing command may have printed the credential.
func (c *Client) runCredentialCmd(ctx context.Context) (string, error) {
	if c.cfg.CredentialCmd == "" {
		return "", &ConfigError{Msg: msgNoAPIKey}
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", c.cfg.CredentialCmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := strings.TrimSpace(stdout.String())
	c.secrets.add(out)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return "", ctxErr
	}
	if err != nil {
		msg := "TINKER_CREDENTIAL_CMD failed: " + err.Error()
		if tail := lastLine(stderr.String()); tail != "" {
			msg += ": " + scrubTokens(c.secrets.string(tail))
		}
		return "", &CredentialError{Msg: msg}
	}
	if out == "" {
		return "", &CredentialError{Msg: "TINKER_CREDENTIAL_CMD printed nothing; it must print a credential on stdout"}
	}
	return out, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// scrubTokens hides words that look like Tinker credentials (tml-… keys,
// eyJ… JWTs) in text from outside, such as a credential command's stderr.
func scrubTokens(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		if strings.Contains(w, "tml-") || strings.Contains(w, "eyJ") {
			words[i] = redacted
		}
	}
	return strings.Join(words, " ")
}
