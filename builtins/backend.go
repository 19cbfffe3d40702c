package builtins

import "errors"

// errNoBackend explains how to choose a backend in one line.
var errNoBackend = errors.New("no backend chosen: set TINKER_API_KEY for the Tinker service, or start tinker with --local for the local server")

// ErrNoBackend is returned by builtins that need the service when neither a
// credential nor --local was given.
func ErrNoBackend() error { return errNoBackend }
