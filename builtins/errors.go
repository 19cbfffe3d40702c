package builtins

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// UserError is a failure the user can act on. Msg is the one-line message
// (the official CLI's "Error: ..." text); Details the optional lines the CLI
// prints below it. In the shell only Msg is shown.
type UserError struct {
	Msg     string
	Details string
}

func (e *UserError) Error() string { return e.Msg }

func userErr(msg, details string) error { return &UserError{Msg: msg, Details: details} }

// APIError wraps a client error with the official CLI's wording for the
// shell ("Resource not found: Error code: 404 - {...}") while keeping the
// original for callers that map errors themselves.
type APIError struct{ Err error }

func (e *APIError) Error() string {
	msg, details := tinkerapi.CLIError(e.Err)
	if i := strings.LastIndex(details, "Details: "); i >= 0 {
		return msg + ": " + details[i+len("Details: "):]
	}
	return msg
}

func (e *APIError) Unwrap() error { return e.Err }

// apiErr wraps err unless it is a cancellation or already a user error.
func apiErr(err error) error {
	if err == nil {
		return nil
	}
	var ue *UserError
	if errors.As(err, &ue) || errors.Is(err, context.Canceled) {
		return err
	}
	return &APIError{Err: err}
}

// pathError is the official CLI's message for an argument that is not a
// tinker:// path at all.
func pathError(p string) error {
	return userErr("Invalid checkpoint path: "+p, "Checkpoint path must be in the format: tinker://run-id/weights/0001")
}

func parsePath(p string) (tinkerapi.Path, error) {
	if !strings.HasPrefix(p, "tinker://") {
		return tinkerapi.Path{}, pathError(p)
	}
	parsed, err := tinkerapi.ParsePath(p)
	if err != nil {
		return tinkerapi.Path{}, userErr(err.Error(), "")
	}
	return parsed, nil
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
