package app

import (
	"fmt"
	"time"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/term"
)

// noBackend is used when neither a credential nor --local was given: the
// prompt still starts, and API builtins explain how to choose.
type noBackend struct{}

func (noBackend) Name() string { return "none (set TINKER_API_KEY, or start with --local)" }
func (noBackend) Client() (any, error) {
	return nil, fmt.Errorf("no backend chosen: set TINKER_API_KEY for the Tinker service, or run `tinker --local` for the local server")
}

// chooseBackend picks the backend from flags and environment.
func chooseBackend(io *term.IO, opts options, now func() time.Time) (builtins.Backend, func(), error) {
	return noBackend{}, func() {}, nil
}
