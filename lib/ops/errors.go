package ops

import (
	"context"
	"errors"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// UserErr is a failure the user can act on, in the official CLI's words.
func UserErr(msg, details string) error { return &tinkerapi.UserError{Msg: msg, Details: details} }

// APIErr words a client error for the shell, unless it is a cancellation
// or already a user error.
func APIErr(err error) error {
	if err == nil {
		return nil
	}
	var ue *tinkerapi.UserError
	if errors.As(err, &ue) || errors.Is(err, context.Canceled) {
		return err
	}
	return tinkerapi.Worded(err)
}

// ErrNoBackend explains how to choose a backend in one line.
var ErrNoBackend = errors.New("no backend chosen: set TINKER_API_KEY for the Tinker service, or start tinker with --local for the local server")

// APIMessage is the SDK-style message of a client error.
func APIMessage(err error) string {
	if ae, ok := err.(*tinkerapi.APIError); ok {
		return ae.Message
	}
	return err.Error()
}

// SessionErr gives failed futures their server message in one line.
func SessionErr(err error) error {
	var rf *tinkerapi.RequestFailedError
	if errors.As(err, &rf) {
		return UserErr(rf.Message, "")
	}
	return APIErr(err)
}
