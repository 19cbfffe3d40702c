package tinkerapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/tinkershell/tinker/lib/pylit"
)

// APIError is a non-success HTTP status from the service (after retries).
type APIError struct {
	Status int
	Body   []byte // response body, credentials redacted
	// Message is the SDK's text: "Error code: 404 - {'detail': '…'}" for a
	// JSON body, the trimmed body for other text, "Error code: 404" if empty.
	Message string
	Method  string
	Path    string      // endpoint path without base URL and query
	Header  http.Header // the answer's headers (Retry-After)
}

func (e *APIError) Error() string { return e.Message }

// Detail returns the FastAPI-style "detail" string of the body, or "".
func (e *APIError) Detail() string {
	var v struct {
		Detail string `json:"detail"`
	}
	if json.Unmarshal(e.Body, &v) != nil {
		return ""
	}
	return v.Detail
}

// sdkMessage builds the SDK's error message for a status and body:
// "Error code: <status> - <body>", a JSON body rendered as a Python literal.
func sdkMessage(status int, body []byte) string {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return fmt.Sprintf("Error code: %d", status)
	}
	// The SDK formats the parsed body with str(): a dict or list prints as
	// its repr, a bare JSON string prints without quotes.
	var s string
	if trimmed[0] == '"' && json.Unmarshal(trimmed, &s) == nil {
		return fmt.Sprintf("Error code: %d - %s", status, s)
	}
	if lit, err := pylit.Render(trimmed); err == nil {
		return fmt.Sprintf("Error code: %d - %s", status, lit)
	}
	return string(trimmed)
}

// retryableStatus is the SDK's rule (408, 409, 429 and 5xx) less 507:
// a server out of disk space stays so until someone frees some, so the
// answer is reported at once instead of after minutes of retries.
func retryableStatus(s int) bool {
	return s == 408 || s == 409 || s == 429 || (s >= 500 && s != http.StatusInsufficientStorage)
}

// Kinds of transport failure; test with errors.Is.
var (
	ErrTimeout    = errors.New("Request timed out.")
	ErrConnection = errors.New("Connection error.")
	// ErrInvalidSchema: a 2xx body lacked a required field or had a
	// wrong-typed value.
	ErrInvalidSchema = errors.New("Data returned by API invalid for expected schema.")
)

// TransportError is a request that got no HTTP response: a connection
// failure or a per-attempt timeout.
type TransportError struct {
	Timeout bool
	// Permanent marks failures a retry cannot fix (TLS certificate errors).
	Permanent bool
	// Unreachable marks a refused connection, an unreachable network or an
	// unknown host: nothing is there to answer, so only a few quick
	// retries (maxRefusedRetries, for a server restarting) are worth it.
	Unreachable bool
	Method      string
	Path        string
	Err         error
}

func (e *TransportError) Error() string {
	kind := "connection error"
	if e.Timeout {
		kind = "request timed out"
	}
	return fmt.Sprintf("%s %s: %s: %v", e.Method, e.Path, kind, e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

func (e *TransportError) Is(target error) bool {
	return (target == ErrTimeout && e.Timeout) || (target == ErrConnection && !e.Timeout)
}

// SchemaError is a 2xx response that does not match the expected schema.
type SchemaError struct {
	Path   string // endpoint path
	Field  string // e.g. "checkpoints[3].tinker_path"; empty if the body is not JSON
	Reason string
}

func (e *SchemaError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: response invalid for expected schema: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("%s: response invalid for expected schema: %s: %s", e.Path, e.Field, e.Reason)
}

func (e *SchemaError) Is(target error) bool { return target == ErrInvalidSchema }

// CredentialError is a failure to obtain a credential, e.g. a failing
// TINKER_CREDENTIAL_CMD. Its text never contains the credential.
type CredentialError struct{ Msg string }

func (e *CredentialError) Error() string { return e.Msg }

// CLIError maps an error from this package to the official CLI's message
// and details lines (docs/compat.md, "API errors and retries"):
// the CLI prints "Error: <message>" and,
// when details is non-empty, the details on the following line(s).
// context.Canceled maps to ("Aborted!", "").
func CLIError(err error) (message, details string) {
	err = unworded(err)
	var (
		apiErr  *APIError
		cfgErr  *ConfigError
		credErr *CredentialError
		userErr *UserError
	)
	switch {
	case errors.As(err, &userErr):
		return userErr.Msg, userErr.Details
	case errors.As(err, &apiErr):
		d := "Details: " + apiErr.Message
		switch s := apiErr.Status; {
		case s == 404:
			return "Resource not found", d
		case s == 401:
			return "Authentication failed", "Please check your API key or authentication credentials.\n" + d
		case s == 403:
			return "Permission denied", "You don't have permission to access this resource.\n" + d
		case s == 400:
			return "Invalid request", d
		case s == 422:
			return "Invalid data provided", d
		case s == 429:
			return "Rate limit exceeded", "Please wait a moment before trying again.\n" + d
		case s == http.StatusInsufficientStorage:
			// Not the official CLI's "Internal server error": nothing to
			// retry, and the server's own sentence says what is full.
			if detail := apiErr.Detail(); detail != "" {
				return "Insufficient storage: " + detail, ""
			}
			return "Insufficient storage on the server", ""
		case s >= 500:
			return "Internal server error", "The Tinker API encountered an internal error. Please try again later.\n" + d
		default:
			return fmt.Sprintf("API error (status %d)", s), d
		}
	case errors.Is(err, ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return "Request timeout", "The request to Tinker API timed out. Please try again.\nDetails: Request timed out."
	case errors.Is(err, ErrConnection):
		return "Connection failed", "Could not connect to the Tinker API. Please check your network connection.\nDetails: Connection error."
	case errors.Is(err, ErrInvalidSchema):
		return "API error occurred", "Details: Data returned by API invalid for expected schema."
	case errors.As(err, &cfgErr), errors.As(err, &credErr):
		msg := err.Error()
		if cfgErr != nil {
			msg = cfgErr.Msg
		}
		return "Failed to connect to Tinker API: " + msg, "Please check your network connection and API configuration."
	case errors.Is(err, context.Canceled):
		return "Aborted!", ""
	default:
		return "Unexpected error occurred: " + err.Error(), ""
	}
}

// redactor replaces known secrets in text. Credentials are registered as
// soon as they are read so that any later error or log line is scrubbed.
type redactor struct {
	mu      sync.RWMutex
	secrets []string
}

const redacted = "[REDACTED]"

func (r *redactor) add(s string) {
	s = strings.TrimSpace(s)
	if len(s) < 4 { // too short to scrub without mangling ordinary text
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, have := range r.secrets {
		if have == s {
			return
		}
	}
	r.secrets = append(r.secrets, s)
}

func (r *redactor) string(s string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, redacted)
		}
	}
	return s
}

func (r *redactor) bytes(b []byte) []byte {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, sec := range r.secrets {
		if bytes.Contains(b, []byte(sec)) {
			b = bytes.ReplaceAll(b, []byte(sec), []byte(redacted))
		}
	}
	return b
}
