package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/tinkershell/tinker"

// build builds pkg into dir/name as make build does, with extra flags.
func build(t *testing.T, dir, name, pkg string, flags ...string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	args := append([]string{"build", "-trimpath", "-o", out}, flags...)
	cmd := exec.Command("go", append(args, module+"/"+pkg)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// run runs bin with a fresh data directory and returns its output.
func run(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_STATE_HOME="+filepath.Join(home, "state"),
		"TINKER_API_KEY=", "TINKER_BASE_URL=", "NO_COLOR=1")
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// TestHandOver runs the two executables as installed: tinker, which does
// not link the local server, hands --local over to tinker-local beside
// it; without it, or with another version of it, it says what to do.
func TestHandOver(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both executables")
	}
	dir := t.TempDir()
	tinker := build(t, dir, "tinker", "cmd/tinker")

	// No companion: one line naming it and how to install it, exit 2,
	// before anything ran.
	out, err := run(t, tinker, "--local", "-c", "print(1)")
	if code := exitCode(err); code != 2 || !strings.Contains(out, "tinker-local, which is not installed beside") || strings.Count(out, "\n") != 1 {
		t.Fatalf("tinker --local without tinker-local: exit %d\n%s", code, out)
	}
	out, err = run(t, tinker, "serve", "--addr", "127.0.0.1:1")
	if code := exitCode(err); code != 1 || !strings.Contains(out, "make install") {
		t.Fatalf("tinker serve without tinker-local: exit %d\n%s", code, out)
	}

	// The companion serves a real local store: an empty checkpoint list.
	build(t, dir, "tinker-local", "cmd/tinker-local")
	out, err = run(t, tinker, "--local", "-f", "json", "checkpoint", "list")
	if err != nil || !strings.Contains(out, `"checkpoints": []`) {
		t.Fatalf("tinker --local checkpoint list: %v\n%s", err, out)
	}
	// A link to tinker elsewhere (a PATH entry) finds it too.
	link := filepath.Join(t.TempDir(), "tinker")
	if err := os.Symlink(tinker, link); err != nil {
		t.Fatal(err)
	}
	if out, err = run(t, link, "--local", "-c", "print(1 + 1)"); err != nil || out != "2\n" {
		t.Fatalf("linked tinker --local: %v\n%s", err, out)
	}

	// Another version of the companion refuses.
	build(t, dir, "tinker-local", "cmd/tinker-local", "-ldflags", "-X "+module+"/cmd/tinker/app.Version=0.0.0-other")
	out, err = run(t, tinker, "--local", "-c", "print(1)")
	if code := exitCode(err); code != 1 || !strings.Contains(out, "handed over to tinker-local 0.0.0-other") {
		t.Fatalf("mismatched tinker-local: exit %d\n%s", code, out)
	}
	// Run directly, tinker-local is tinker.
	if out, err = run(t, filepath.Join(dir, "tinker-local"), "-c", "print(1 + 1)"); err != nil || out != "2\n" {
		t.Fatalf("tinker-local -c: %v\n%s", err, out)
	}
}

func exitCode(err error) int {
	if e, ok := err.(*exec.ExitError); ok {
		return e.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
