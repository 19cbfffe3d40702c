package hfhub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/tinkershell/tinker/lib/lazyre"
)

// ErrNotLoggedIn means no Hub token was found in the environment or in the
// hf CLI's token file.
var ErrNotLoggedIn = errors.New("not logged in to the Hugging Face Hub: run `hf auth login` or set HF_TOKEN")

// APIError is an error answer from the Hub (or from the storage it sends
// uploads to). Message is the server's own text, with secrets removed.
type APIError struct {
	Op      string // what was being done, e.g. "create repo me/x"
	Status  int
	Code    string // the Hub's X-Error-Code, e.g. RepoNotFound, RevisionNotFound
	Message string
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("hub: %s: HTTP %d", e.Op, e.Status)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// CheckpointMismatchError is the guard against overwriting a repo that
// holds another checkpoint: its README names a different tinker:// path.
type CheckpointMismatchError struct {
	RepoID   string
	Found    string // the tinker:// path in the repo's README
	Expected string // the path being pushed
}

func (e *CheckpointMismatchError) Error() string {
	return fmt.Sprintf("repo %s appears to contain a different Tinker checkpoint: found %s, expected %s", e.RepoID, e.Found, e.Expected)
}

// apiError reads an error answer. The Hub reports errors as JSON
// {"error": "..."} and in the X-Error-Message header; storage hosts answer
// in XML or text, which is kept short.
func (h *Hub) apiError(op string, resp *http.Response) *APIError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	e := &APIError{Op: op, Status: resp.StatusCode, Code: resp.Header.Get("X-Error-Code")}
	var parsed struct {
		Error any `json:"error"`
	}
	switch {
	case json.Unmarshal(body, &parsed) == nil && parsed.Error != nil:
		if s, ok := parsed.Error.(string); ok {
			e.Message = s
		} else {
			b, _ := json.Marshal(parsed.Error)
			e.Message = string(b)
		}
	case resp.Header.Get("X-Error-Message") != "":
		e.Message = resp.Header.Get("X-Error-Message")
	default:
		e.Message = strings.Join(strings.Fields(string(body)), " ")
	}
	if len(e.Message) > 300 {
		e.Message = e.Message[:300] + "…"
	}
	e.Message = h.redact(e.Message)
	if e.Status == http.StatusUnauthorized {
		e.Message = strings.TrimSuffix(e.Message, ".") + ": " + h.invalidTokenHint()
	}
	return e
}

// invalidTokenHint says which token was refused and how to replace it.
func (h *Hub) invalidTokenHint() string {
	switch h.TokenSource {
	case "":
		return "the Hub refused the token; run `hf auth login` or set HF_TOKEN"
	case "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN":
		return "the token in " + h.TokenSource + " is invalid (it takes precedence over `hf auth login`)"
	default:
		return "the token stored in " + h.TokenSource + " is invalid; run `hf auth login --force`"
	}
}

// tokenLike matches Hub access tokens other than ours (a server may echo
// one, and a token file may differ from HF_TOKEN).
var tokenLike = lazyre.New(`hf_[A-Za-z0-9]{16,}`)

const redacted = "[REDACTED]"

// redact removes the token and anything that looks like a Hub token.
func (h *Hub) redact(s string) string {
	if len(h.Token) >= 4 {
		s = strings.ReplaceAll(s, h.Token, redacted)
	}
	return tokenLike.ReplaceAllString(s, redacted)
}

// scrub returns err unchanged unless its text holds a secret, in which case
// only the redacted text survives (dropping the chain, which holds it too).
func (h *Hub) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := h.redact(msg); clean != msg {
		return errors.New(clean)
	}
	return err
}
