package app

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/term"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// startAllocBudget bounds what `tinker -c '1+1'` allocates after the
// process's first run of it (AllocsPerRun's warm-up takes the one-time
// work): 177 today, most of it the predeclared names (Universe: 25
// builtins and 5 lazy modules; boundUniverse's 9 wrappers) and Starlark's
// parse and compile. Building the modules' members, the signal handler or
// the client configuration eagerly would pass it; each new size class of
// object in a fresh process is also a fresh span, one or two page faults.
const startAllocBudget = 200

func TestMinusCAllocationBudget(t *testing.T) {
	t.Setenv("TINKER_API_KEY", "")
	t.Setenv("TINKER_CREDENTIAL_CMD", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	var out, errb bytes.Buffer
	n := testing.AllocsPerRun(10, func() {
		out.Reset()
		errb.Reset()
		if code := Main([]string{"-c", "1+1"}, term.Test(strings.NewReader(""), &out, &errb)); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
	})
	if out.String() != "2\n" {
		t.Fatalf("printed %q", out.String())
	}
	t.Logf("tinker -c '1+1': %v allocations (budget %d)", n, startAllocBudget)
	if n > startAllocBudget {
		t.Errorf("tinker -c '1+1' allocates %v times, over the budget of %d: make the new work lazy", n, startAllocBudget)
	}
}

// chooseBackend decides "no backend" before lib/tinkerapi's configuration
// is read (one page of code less at the start); the answer must be the
// one the configuration gives, with the variables from the environment or
// a profile.
func TestNoBackendShortcutAgreesWithConfig(t *testing.T) {
	io := term.Test(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	for _, env := range []map[string]string{
		{},
		{"TINKER_API_KEY": "k"},
		{"TINKER_CREDENTIAL_CMD": "echo k"},
		{"TINKER_BASE_URL": "http://example.invalid"},
		{"CLOUDFLARE_ACCESS_CLIENT_ID": "id", "CLOUDFLARE_ACCESS_CLIENT_SECRET": "s"},
	} {
		opts := options{getenv: func(k string) string { return env[k] }}
		b, cleanup, err := chooseBackend(io, opts, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		cleanup()
		cfg := tinkerapi.ConfigFromEnv(opts.env)
		_, none := b.(noBackend)
		if want := cfg.APIKey == "" && cfg.CredentialCmd == ""; none != want {
			t.Errorf("env %v: no backend = %v, the configuration says %v", env, none, want)
		}
	}
	opts := options{getenv: func(string) string { return "" }, models: []string{"m=/x"}}
	if _, _, err := chooseBackend(io, opts, time.Now); err == nil {
		t.Error("--model without --local and without a credential was accepted")
	}
}
