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

// Expected reports whether err is a failure a builtin reported in words,
// of the outside world or of the input it was given (no backend chosen, a
// refused or failed request, a path that does not exist), as opposed to a
// mistake in the calling program's own code. The shell shows an expected
// error as one line at the call instead of a traceback.
func Expected(err error) bool {
	var (
		ue *tinkerapi.UserError
		ae *tinkerapi.APIError
		te *tinkerapi.TransportError
		ce *tinkerapi.ConfigError
		cr *tinkerapi.CredentialError
	)
	return errors.Is(err, errNoBackend) || errors.As(err, &ue) || errors.As(err, &ae) ||
		errors.As(err, &te) || errors.As(err, &ce) || errors.As(err, &cr)
}
