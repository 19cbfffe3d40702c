package app

import (
	"strings"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/doctor"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// tinker doctor: what the configured backend offers and what to fix, as
// doctor() reports it (an addition; the official CLI has no such command).

var doctorCmd = &command{
	Name:    "doctor",
	Summary: "Check the backend: reachability, credential source, models, endpoints, HF cache.",
	Help: "Probe the configured backend with reads only: whether it answers and accepts the\n" +
		"credential (its source is shown, never its value), its base models and which can run\n" +
		"now, which optional endpoints it offers, and the Hugging Face cache tokenizers come\n" +
		"from; then what to fix. Exits 1 when the backend cannot be used.",
	API: runDoctor,
}

// errUnusable ends the command with status 1 after the report.
var errUnusable = &tinkerapi.UserError{Msg: "the backend cannot be used: see \"To fix\" above"}

func runDoctor(r *apiRun) error {
	c, err := r.backend.Client()
	if err != nil {
		return err
	}
	name := r.backend.Name()
	rep := doctor.Check(r.ctx, c, doctor.Options{Backend: name, Local: strings.HasPrefix(name, "local"), Now: r.now})
	if err := r.display().Show(&builtins.Doctor{R: rep}); err != nil {
		return err
	}
	if !rep.OK() {
		return errUnusable
	}
	return nil
}
