package builtins

import (
	"os/exec"
	"regexp"
	"testing"
)

// Close runs at every exit of tinker, most often with no session ever
// opened (`tinker -c '1+1'`, scripts that call no service). Its check must
// stay inlined into the caller: otherwise the exit faults in the page of
// this package's code that holds Close, one of the start path's ~70 text
// faults (docs/architecture.md, "Cold start: what `tinker -c '1+1'` pays,
// and its floor").
func TestCloseInlines(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the package with -m")
	}
	out, err := exec.Command("go", "build", "-gcflags=github.com/tinkershell/tinker/builtins=-m", "-o", "/dev/null", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)env\.go:\d+:\d+: can inline \(\*Env\)\.Close\b`).Match(out) {
		t.Error("(*Env).Close is no longer inlinable: keep its no-session check small and the work in closeSession")
	}
}

// Without a session Close does nothing, and does not mark one opened.
func TestCloseWithoutSession(t *testing.T) {
	var e Env
	e.Close()
	e.Close()
	if e.sess.opened.Load() || e.sess.session != nil {
		t.Error("Close without a session changed the session state")
	}
}
