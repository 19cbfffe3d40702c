// Package golden holds end-to-end cases that run the real tinker command:
// a script or session in, exact stdout, stderr and exit status out.
//
// Cases live in testdata/*.txtar (rogpeppe/go-internal testscript). Run
// `make golden-update` (go test ./golden -update) to rewrite expected
// output, then review the diff.
package golden

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tinkershell/tinker/cmd/tinker/app"
	"github.com/tinkershell/tinker/cmd/tinker/localserver"
	"github.com/tinkershell/tinker/lib/term"
)

var update = flag.Bool("update", false, "rewrite golden files with the actual output")

// FixedNow is the clock every case runs with.
const FixedNow = "2026-11-22T12:00:00Z"

func TestMain(m *testing.M) {
	// The cases run tinker as tinker-local does, with the local server
	// linked in (cmd/tinker-local's TestHandOver runs the hand-over).
	app.Local = localserver.Server{}
	testscript.Main(m, map[string]func(){
		"tinker": func() { os.Exit(app.Main(os.Args[1:], term.System())) },
	})
}

func TestGolden(t *testing.T) {
	testscript.Run(t, Params(t, "testdata"))
}

// Params are shared by every golden suite.
func Params(t *testing.T, dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			work := env.WorkDir
			for k, v := range map[string]string{
				"HOME":            work,
				"XDG_STATE_HOME":  filepath.Join(work, ".state"),
				"XDG_DATA_HOME":   filepath.Join(work, ".data"),
				"XDG_CACHE_HOME":  filepath.Join(work, ".cache"),
				"XDG_CONFIG_HOME": filepath.Join(work, ".config"),
				"NO_COLOR":        "1",
				"TINKER_NOW":      FixedNow,
				"TERM":            "dumb",
			} {
				env.Setenv(k, v)
			}
			// REPO lets script_*.txtar cases run the repository's scripts/.
			if repo, err := filepath.Abs(".."); err == nil {
				env.Setenv("REPO", repo)
			}
			env.Values[hubKey{}] = &hubHolder{}
			for _, k := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HOME", "HF_ENDPOINT", "TINKER_API_KEY", "TINKER_BASE_URL", "TINKER_FORCE_TTY", "CLICOLOR_FORCE", "COLUMNS", "TINKER_CREDENTIAL_CMD", "TINKER_PROFILE"} {
				env.Setenv(k, "")
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"hubfake": hubFake,
			// exits N cmd args... runs a command and asserts its exit status.
			"exits": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) < 2 || neg {
					ts.Fatalf("usage: exits CODE command [args...]")
				}
				want, err := strconv.Atoi(args[0])
				if err != nil {
					ts.Fatalf("exits: bad code %q", args[0])
				}
				err = ts.Exec(args[1], args[2:]...)
				got := 0
				var ee *exec.ExitError
				switch {
				case errors.As(err, &ee):
					got = ee.ExitCode()
				case err != nil:
					ts.Fatalf("exits: %v", err)
				}
				if got != want {
					ts.Fatalf("exit status %d, want %d", got, want)
				}
			},
		},
	}
}
