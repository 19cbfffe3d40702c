package builtins

import (
	"context"
	"errors"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// userErr is a failure the user can act on, in the official CLI's words.
func userErr(msg, details string) error { return &tinkerapi.UserError{Msg: msg, Details: details} }

// apiErr words a client error for the shell, unless it is a cancellation
// or already a user error.
func apiErr(err error) error {
	if err == nil {
		return nil
	}
	var ue *tinkerapi.UserError
	if errors.As(err, &ue) || errors.Is(err, context.Canceled) {
		return err
	}
	return tinkerapi.Worded(err)
}
