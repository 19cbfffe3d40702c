package app

import (
	"bytes"
	"debug/elf"
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

// minusCPath are this package's functions that every `tinker -c` runs.
// The linker lays a package's code out file by file, in source order, and
// the kernel maps a binary's code 64 KB at a time as it is first run: kept
// together (app.go, backend.go) they are one or two of those stretches,
// not one more for each file they are spread over (matchFlag in cli.go
// was one).
var minusCPath = []string{"Main", "parseGlobal", "matchFlag", "(*options).applyProfile", "clock", "newInterp", "runStarlark", "chooseBackend"}

// minusCPathSpan bounds the bytes from the first of them to the end of the
// last: 14.6 KB today; with matchFlag back in cli.go, 27 KB.
const minusCPathSpan = 24 << 10

func TestMinusCPathCodeIsContiguous(t *testing.T) {
	syms := binarySymbols(t)
	addr := map[string]elf.Symbol{}
	for _, s := range syms {
		if name, ok := strings.CutPrefix(s.Name, module+"/cmd/tinker/app."); ok && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			addr[name] = s
		}
	}
	lo, hi := ^uint64(0), uint64(0)
	for _, name := range minusCPath {
		s, ok := addr[name]
		if !ok {
			t.Fatalf("no function app.%s in the binary: update minusCPath", name)
		}
		lo, hi = min(lo, s.Value), max(hi, s.Value+s.Size)
	}
	if hi-lo > minusCPathSpan {
		t.Errorf("the functions every tinker -c runs span %d bytes of code, over %d: keep them in app.go and backend.go", hi-lo, minusCPathSpan)
	}
}
