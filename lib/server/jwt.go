package server

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The JWT exchange ("pjwt auth", docs/protocol.md "Authentication"), off
// unless Options.JWT: client/config then says pjwt_auth_enabled, auth/token
// trades an accepted API key for a JWT naming the key's user, and every
// other endpoint accepts that JWT in X-API-Key until it expires. Tokens are
// HS256-signed with a secret kept in the data directory, so they stay
// valid across a restart of the server on the same data.

// jwtIssuer is the iss claim of this server's tokens.
const jwtIssuer = "tinker-serve"

// defaultJWTLifetime is how long a token lives unless Options.JWTLifetime
// says otherwise; clients refresh five minutes before it ends.
const defaultJWTLifetime = time.Hour

// jwtSecretFile holds the signing secret (hex), mode 0600.
const jwtSecretFile = "jwt-secret"

// loadJWTSecret reads the data directory's signing secret, creating it on
// first use.
func loadJWTSecret(dataDir string) ([]byte, error) {
	p := filepath.Join(dataDir, jwtSecretFile)
	if b, err := readSecretFile(p); err == nil {
		return parseJWTSecret(p, b)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) { // another server on this directory made it first
			return loadJWTSecret(dataDir)
		}
		return nil, fmt.Errorf("create JWT secret: %w", err)
	}
	_, err = f.WriteString(hex.EncodeToString(secret) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p)
		return nil, fmt.Errorf("write JWT secret: %w", err)
	}
	return secret, nil
}

// readSecretFile reads the secret file at p: a regular file, at most
// 4 KiB, that no other user can read (anyone who reads it can sign tokens
// for every user of the server).
func readSecretFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("read JWT secret: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, fmt.Errorf("read JWT secret: %w", err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file: delete it to make a new secret (issued tokens stop working)", p)
	case fi.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("%s can be read by other users (mode %04o), who could sign tokens for any user: chmod 600 it, or delete it to make a new one (issued tokens stop working)", p, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, 4<<10))
	if err != nil {
		return nil, fmt.Errorf("read JWT secret: %w", err)
	}
	return b, nil
}

// parseJWTSecret decodes the hex secret read from p, refusing one too
// short or without entropy (all one byte value, such as all zeros).
func parseJWTSecret(p string, b []byte) ([]byte, error) {
	secret, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(secret) < 32 {
		return nil, fmt.Errorf("%s is not a signing secret: delete it to make a new one (issued tokens stop working)", p)
	}
	if bytes.Count(secret, secret[:1]) == len(secret) {
		return nil, fmt.Errorf("%s holds a secret anyone could guess (every byte %#02x): delete it to make a new one (issued tokens stop working)", p, secret[0])
	}
	return secret, nil
}

// jwtClaims are the claims this server signs; clients read sub and email
// (whoami) and exp (refresh).
type jwtClaims struct {
	Sub   string `json:"sub"`
	Email string `json:"email"`
	Iss   string `json:"iss"`
	Iat   int64  `json:"iat"`
	Exp   int64  `json:"exp"`
	// Kid names the API key the token was traded for (keyID), so a token
	// stops working once its key is no longer accepted (a restart with
	// other --api-key values), not an hour later.
	Kid string `json:"kid"`
}

// jwtHeader is jwtHeaderJSON in unpadded base64url, written out so no
// start encodes it (TestJWTHeaderEncoding encodes it).
const (
	jwtHeaderJSON = `{"alg":"HS256","typ":"JWT"}`
	jwtHeader     = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
)

// signJWT returns a token for the user urn holding the API key whose hash
// is keyHash, valid for the configured lifetime.
func (s *Server) signJWT(urn, keyHash string) string {
	now := s.now()
	payload, _ := json.Marshal(jwtClaims{Sub: urn, Iss: jwtIssuer, Iat: now.Unix(), Exp: now.Add(s.opts.JWTLifetime).Unix(), Kid: s.keyID(keyHash)})
	head := jwtHeader + "." + base64.RawURLEncoding.EncodeToString(payload)
	return head + "." + s.jwtMAC(head)
}

// keyID is a token's kid for the key with this hash: a MAC under the
// signing secret, so the token (readable by anyone holding it) reveals
// nothing about the key.
func (s *Server) keyID(keyHash string) string {
	m := hmac.New(sha256.New, s.jwtSecret)
	m.Write([]byte("kid\x00" + keyHash))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// keyInForce reports whether the key a token names is still accepted:
// with configured keys, one of them; without, every tml- key is.
func (s *Server) keyInForce(kid string) bool {
	if len(s.keys) == 0 {
		return kid != ""
	}
	for h := range s.keys {
		if hmac.Equal([]byte(kid), []byte(s.keyID(h))) {
			return true
		}
	}
	return false
}

func (s *Server) jwtMAC(head string) string {
	m := hmac.New(sha256.New, s.jwtSecret)
	m.Write([]byte(head))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verifyJWT returns the user of a token this server signed and that has not
// expired; anything else is a 401, which clients do not retry.
func (s *Server) verifyJWT(tok string) (string, *errorResponse) {
	bad := func(why string) *errorResponse {
		return errorf(http.StatusUnauthorized, "Invalid JWT: %s; exchange the API key for a new one at auth/token", why)
	}
	i := strings.LastIndexByte(tok, '.')
	if i < 0 || strings.Count(tok, ".") != 2 || !strings.HasPrefix(tok, jwtHeader+".") {
		return "", bad("not a token of this server")
	}
	if !hmac.Equal([]byte(tok[i+1:]), []byte(s.jwtMAC(tok[:i]))) {
		return "", bad("bad signature")
	}
	payload, err := base64.RawURLEncoding.DecodeString(tok[len(jwtHeader)+1 : i])
	var cl jwtClaims
	if err != nil || json.Unmarshal(payload, &cl) != nil || cl.Sub == "" {
		return "", bad("unreadable claims")
	}
	if s.now().Unix() >= cl.Exp {
		return "", bad("expired")
	}
	if !s.keyInForce(cl.Kid) {
		return "", bad("its API key is no longer accepted by this server")
	}
	return cl.Sub, nil
}

// authToken answers auth/token: the caller, authenticated by its API key,
// gets a JWT. A JWT cannot be traded for another one.
func (s *Server) authToken(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	if !s.opts.JWT {
		return errorf(http.StatusNotFound, "JWT exchange is off on this server (start tinker serve with --jwt); send the API key itself")
	}
	if isJWTCredential(r.Header.Get("X-API-Key")) {
		return errorf(http.StatusBadRequest, "auth/token takes an API key, not a JWT")
	}
	var body map[string]any
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	writeJSON(w, 200, map[string]string{"jwt": s.signJWT(owner, hashKey(r.Header.Get("X-API-Key")))})
	return nil
}

// isJWTCredential tells a JWT (base64url JSON header, "eyJ…") from an API key.
func isJWTCredential(k string) bool { return strings.HasPrefix(k, "eyJ") }
