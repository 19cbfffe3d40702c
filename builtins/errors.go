package builtins

import (
	"errors"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// userErr, apiErr and sessionErr word errors as lib/ops does, for the
// adapters that fail before or after calling an operation.
func userErr(msg, details string) error { return ops.UserErr(msg, details) }
func apiErr(err error) error            { return ops.APIErr(err) }
func sessionErr(err error) error        { return ops.SessionErr(err) }

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
	return errors.Is(err, ops.ErrNoBackend) || errors.As(err, &ue) || errors.As(err, &ae) ||
		errors.As(err, &te) || errors.As(err, &ce) || errors.As(err, &cr)
}
