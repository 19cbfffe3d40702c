package app

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/tinkerapi/partialtest"
)

// TestDoctorCommand (issue 22, item 7): tinker doctor and doctor() against
// a backend with part of the API: the report names what it does not offer
// and the credential's source but never the credential, exits 0 while the
// backend is usable, and 1 with the fix when nothing answers.
func TestDoctorCommand(t *testing.T) {
	stub := partialtest.New()
	defer stub.Close()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("HF_HUB_CACHE", home+"/hub")
	t.Setenv("TINKER_API_KEY", "tml-doctor-command-key")
	t.Setenv("TINKER_BASE_URL", stub.URL())
	code, out, errOut := run("", "doctor")
	for _, want := range []string{"Endpoint sessions", "not offered (404)", "an API key in TINKER_API_KEY",
		// the finding wraps at 100 columns, piped
		"this backend does not offer client config, all checkpoints, sessions,", "session export, or billing", partialtest.BaseModel} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	if code != 0 || strings.Contains(out+errOut, "tml-doctor-command-key") {
		t.Errorf("exit %d, stderr %q; output shows the key or failed:\n%s", code, errOut, out)
	}
	code, out, _ = run("", "-f", "json", "doctor")
	var j struct {
		OK        bool
		Endpoints map[string]struct{ State string }
	}
	if err := json.Unmarshal([]byte(out), &j); code != 0 || err != nil || !j.OK || j.Endpoints["billing"].State != "not offered" {
		t.Errorf("doctor -f json: %d %v %s", code, err, out)
	}
	if code, out, errOut := run("", "-c", `doctor().endpoints["session export"]`); code != 0 || strings.TrimSpace(out) != "not offered" {
		t.Errorf("doctor(): %d %q %q", code, out, errOut)
	}
	t.Setenv("TINKER_BASE_URL", "http://127.0.0.1:1")
	code, out, errOut = run("", "doctor")
	if code != 1 || !strings.Contains(out, "nothing answers at http://127.0.0.1:1") || !strings.Contains(errOut, `see "To fix" above`) {
		t.Errorf("unreachable: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestPartialBackendCommands (issue 22, item 7): the official CLI's
// commands against a backend with part of the API: runs owned by
// "default" list, and a command whose endpoint is missing says so in one
// line and exits 1.
func TestPartialBackendCommands(t *testing.T) {
	stub := partialtest.New()
	defer stub.Close()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("TINKER_API_KEY", "tml-partial")
	t.Setenv("TINKER_BASE_URL", stub.URL())
	if code, out, errOut := run("", "run", "list"); code != 0 || errOut != "" {
		t.Errorf("run list: %d %q\n%s", code, errOut, out)
	}
	for args, want := range map[string]string{
		"session export-trace session_1":                          "Error: this backend does not offer session export\n",
		"billing usage 2026-01-01T00:00:00Z 2026-01-02T00:00:00Z": "Error: this backend does not offer billing\n",
	} {
		code, out, errOut := run("", strings.Fields(args)...)
		if code != 1 || !strings.HasSuffix(errOut, want) || strings.Count(errOut, "Error") != 1 {
			t.Errorf("%s: exit %d, stderr %q, want %q\n%s", args, code, errOut, want, out)
		}
	}
}
