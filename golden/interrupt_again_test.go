package golden

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A second Ctrl-C quits any subcommand at once with 130, whatever the
// first left it waiting for: here `tinker sample --prompt-file FIFO`
// blocked reading a FIFO whose writer never writes (as `<(slow producer)`
// would), which cancelling the command's context cannot end. Before, the
// shared runAPI swallowed every Ctrl-C after the first.
func TestSecondInterruptQuitsSubcommand(t *testing.T) {
	home := t.TempDir()
	fifo := filepath.Join(home, "prompt")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	cmd := tinkerCmd(t, home, "--local", "sample", "--base-model", "tinker-local/tiny-llama", "--prompt-file", fifo)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()
	// The write end opens once the command opens the FIFO to read, so from
	// then on it waits for data that never comes.
	w := openWriterWhenRead(t, fifo, done)
	defer w.Close()
	guard := time.After(60 * time.Second) // a hang guard, not a timing
	for {
		cmd.Process.Signal(os.Interrupt) // signals sent together may merge: send until it ends
		select {
		case err := <-done:
			if code := exitCode(err); code != 130 || !strings.Contains(stderr.String(), "interrupted again: quitting at once") {
				t.Fatalf("exit %d, stderr:\n%s", code, &stderr)
			}
			return
		case <-guard:
			t.Fatalf("still running after Ctrl-Cs; stderr:\n%s", &stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// openWriterWhenRead opens fifo's write end without blocking, polling
// until a reader has it open (ENXIO until then).
func openWriterWhenRead(t *testing.T, fifo string, done <-chan error) *os.File {
	t.Helper()
	for {
		w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			return w
		}
		if !errors.Is(err, syscall.ENXIO) {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			t.Fatalf("the command ended before reading: %v", err)
		case <-time.After(10 * time.Millisecond): // polling, not timing
		}
	}
}
