package golden

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstall runs the README's `make install`: the binary goes to
// $GOBIN when set, else to ~/.local/bin (created), and make says where and
// whether that directory is on the PATH.
func TestMakeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs make install (-short skips it)")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("needs make")
	}
	// A fresh HOME hides the user's ~/.local/bin, and GOENV=off their go
	// env file (which may set GOBIN); the Go settings that file or HOME
	// decide are passed as they are, so the build is the cached one
	// `make test` just made.
	keep := []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOTOOLCHAIN", "GOPROXY", "GOFLAGS", "CGO_ENABLED", "GOEXPERIMENT"}
	goenv, err := exec.Command("go", append([]string{"env"}, keep...)...).Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	values := strings.Split(strings.TrimSuffix(string(goenv), "\n"), "\n")
	if len(values) != len(keep) {
		t.Fatalf("go env printed %q", goenv)
	}
	for _, c := range []struct{ name, gobin, path, want string }{
		{name: "GOBIN", gobin: "gobin", path: "gobin", want: "gobin/tinker"},
		{name: "default", want: ".local/bin/tinker"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			pathDirs := os.Getenv("PATH")
			if c.path != "" {
				pathDirs = filepath.Join(home, c.path) + ":" + pathDirs
			}
			var env []string
			for _, kv := range os.Environ() {
				switch k, _, _ := strings.Cut(kv, "="); k {
				case "HOME", "PATH", "GOENV", "GOBIN", "MAKEFLAGS", "MFLAGS", "MAKELEVEL": // not a sub-make of make test
				default:
					env = append(env, kv)
				}
			}
			env = append(env, "HOME="+home, "PATH="+pathDirs, "GOENV=off")
			for i, k := range keep {
				env = append(env, k+"="+values[i])
			}
			if c.gobin != "" {
				env = append(env, "GOBIN="+filepath.Join(home, c.gobin))
			}
			cmd := exec.Command("make", "--no-print-directory", "-C", "..", "install")
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("make install: %v\n%s", err, out)
			}
			want := filepath.Join(home, c.want)
			if !strings.Contains(string(out), "installed "+want+"\n") {
				t.Errorf("make install did not say it installed %s:\n%s", want, out)
			}
			onPath := !strings.Contains(string(out), "is not on your PATH")
			if onPath != (c.path != "") {
				t.Errorf("make install: PATH hint wrong (directory on PATH: %v):\n%s", c.path != "", out)
			}
			if interp := elfInterpreter(t, want); interp != "" {
				t.Errorf("%s asks for the dynamic loader %s: make build is static (CGO_ENABLED=0), so it starts without ld.so and libc", want, interp)
			}
			version, err := exec.Command(want, "--version").CombinedOutput()
			if err != nil || !strings.HasPrefix(string(version), "tinker ") {
				t.Errorf("%s --version: %v\n%s", want, err, version)
			}
			// tinker hands --local over to tinker-local, installed beside it.
			local := filepath.Join(filepath.Dir(want), "tinker-local")
			if !strings.Contains(string(out), "installed "+local+"\n") {
				t.Errorf("make install did not say it installed %s:\n%s", local, out)
			}
			handover := exec.Command(want, "--local", "-c", "print(1 + 1)")
			handover.Env = append(env, "XDG_DATA_HOME="+filepath.Join(home, "data"))
			if got, err := handover.CombinedOutput(); err != nil || string(got) != "2\n" {
				t.Errorf("%s --local -c 'print(1 + 1)': %v\n%s", want, err, got)
			}
		})
	}
}

// elfInterpreter returns the program interpreter (PT_INTERP) bin asks
// for, or "" for a static binary.
func elfInterpreter(t *testing.T, bin string) string {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("read %s: %v", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				t.Fatalf("read %s's interpreter: %v", bin, err)
			}
			return strings.TrimRight(string(b), "\x00")
		}
	}
	return ""
}
