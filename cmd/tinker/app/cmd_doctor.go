package app

import (
	"fmt"
	"os"

	"github.com/tinkershell/tinker/lib/config"

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
	rep, err := builtins.CheckBackend(r.ctx, r.backend, doctor.Options{Now: r.now, Config: configText(r.opts.resolved), LocalData: DataDir()}, r.opts.env("TINKER_BASE_URL"))
	if err != nil {
		return err
	}
	if err := r.display().Show(&builtins.Doctor{R: rep}); err != nil {
		return err
	}
	if !rep.OK() {
		return errUnusable
	}
	return nil
}

// configText describes the config file and profile in force.
func configText(s *config.Settings) string {
	if s == nil {
		return ""
	}
	state := "absent"
	if _, err := os.Stat(s.Path); err == nil {
		state = "present"
	}
	profile := "no profile"
	if s.Profile.Value != "" {
		profile = "profile " + s.Profile.Value
	}
	return fmt.Sprintf("%s (%s), %s", s.Path, state, profile)
}
