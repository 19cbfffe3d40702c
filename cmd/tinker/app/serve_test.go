package app

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/server"
	"github.com/tinkershell/tinker/lib/userfile"
)

// tinker serve binds before it announces or creates anything: a taken
// address or a refused one fails with one error, no banner and no data
// directory left behind.
func TestServeFailsBeforeAnnouncingOrCreating(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	t.Setenv(server.KeysEnv, "")
	for _, addr := range []string{taken.Addr().String(), "0.0.0.0:0"} {
		dir := filepath.Join(t.TempDir(), "data")
		code, out, errOut := run("", "serve", "--addr", addr, "--data", dir)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1 (stderr %q)", addr, code, errOut)
		}
		if strings.Contains(out+errOut, "tinker server on") {
			t.Errorf("%s: announced a server that did not start: %q", addr, errOut)
		}
		if !strings.HasPrefix(errOut, "Error: ") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s: want one Error: line, got %q", addr, errOut)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s: data directory created by a failed start (stat: %v)", addr, err)
		}
	}
}

// --shutdown-grace takes a Go duration; 0 (halt at once) becomes the
// option's negative value, since the option reads 0 as its default. A bad
// value is a usage error naming the flag, before anything starts.
// --abandon-grace takes a positive Go duration; a bad value is a usage
// error naming the flag, before anything starts.
func TestServeAbandonGrace(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 0, "30s": 30 * time.Second, "1m30s": 90 * time.Second} {
		if got, err := abandonGrace(v); err != nil || got != want {
			t.Errorf("abandonGrace(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	t.Setenv(server.KeysEnv, "")
	for _, v := range []string{"0", "-5s", "soon"} {
		dir := filepath.Join(t.TempDir(), "data")
		code, _, errOut := run("", "serve", "--addr", "127.0.0.1:0", "--data", dir, "--abandon-grace", v)
		if code != 2 || !strings.Contains(errOut, "'--abandon-grace'") || !strings.Contains(errOut, "positive duration") {
			t.Errorf("--abandon-grace %s: exit %d %q, want a usage error naming the flag", v, code, errOut)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("--abandon-grace %s: data directory created (stat: %v)", v, err)
		}
	}
}

func TestServeShutdownGrace(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 0, "0": -1, "0s": -1, "10s": 10 * time.Second, "2m": 2 * time.Minute} {
		if got, err := shutdownGrace(v); err != nil || got != want {
			t.Errorf("shutdownGrace(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	t.Setenv(server.KeysEnv, "")
	for _, v := range []string{"-5s", "soon", "10"} {
		dir := filepath.Join(t.TempDir(), "data")
		code, _, errOut := run("", "serve", "--addr", "127.0.0.1:0", "--data", dir, "--shutdown-grace", v)
		if code != 2 || !strings.Contains(errOut, "'--shutdown-grace'") || !strings.Contains(errOut, "not a duration") {
			t.Errorf("--shutdown-grace %s: exit %d %q, want a usage error naming the flag", v, code, errOut)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("--shutdown-grace %s: data directory created (stat: %v)", v, err)
		}
	}
}

// serve import reads its manifest as the rest of the program reads a
// person's files: a FIFO fed without end is read up to a bound, then
// refused with one error, and nothing is imported.
func TestServeImportBoundsAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "manifest")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Opened read-write the FIFO always has a writer; closing it ends the
	// feeding goroutine. Past the bound comes a valid (empty) manifest.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	go func() {
		pad := bytes.Repeat([]byte(" "), 1<<20)
		for range userfile.SpecialLimit>>20 + 1 {
			if _, err := w.Write(pad); err != nil {
				return
			}
		}
		w.Write([]byte(`{"runs": []}`))
	}()
	dir := filepath.Join(t.TempDir(), "data")
	code, _, errOut := run("", "serve", "import", "--data", dir, fifo)
	if code != 1 || !strings.HasPrefix(errOut, "Error: cannot read manifest:") || !strings.Contains(errOut, "more than") {
		t.Errorf("exit %d, stderr %q; want one error naming the bound", code, errOut)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data directory created by a refused import (stat: %v)", err)
	}
}
