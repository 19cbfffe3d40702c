package builtins

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.starlark.net/starlark"
)

// ioCall calls io.NAME(args...) on a thread whose context is ctx.
func ioCall(ctx context.Context, name string, args ...starlark.Value) (starlark.Value, error) {
	module := Universe()["io"].(starlark.HasAttrs)
	fn, _ := module.Attr(name)
	thread := &starlark.Thread{}
	SetContext(thread, ctx)
	return starlark.Call(thread, fn, args, nil)
}

// TestIOSpecialFiles: io.read_text of an endless device stops at a bound
// (it once read until memory ran out), a wait on a silent FIFO ends when
// the script is interrupted, and io.write_text writes through a device
// node instead of replacing it. The nodes are made here, never in /dev.
func TestIOSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	zero, null := filepath.Join(dir, "zero"), filepath.Join(dir, "null")
	for p, minor := range map[string]int{zero: 5, null: 3} {
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|minor); err != nil {
			t.Skipf("mknod needs root here: %v", err)
		}
	}
	if _, err := ioCall(context.Background(), "read_text", starlark.String(zero)); err == nil || !strings.Contains(err.Error(), "more than io reads at once") {
		t.Errorf("read_text of an endless device: %v", err)
	}
	if _, err := ioCall(context.Background(), "write_text", starlark.String(null), starlark.String("x")); err != nil {
		t.Errorf("write_text to a device: %v", err)
	}
	if st, _ := os.Lstat(null); st.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("write_text replaced the device node with %v", st.Mode())
	}

	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o600)
	w, err := os.OpenFile(fifo, os.O_RDWR, 0) // a writer that never writes
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel) // Ctrl-C
	done := make(chan error, 1)
	go func() { _, err := ioCall(ctx, "read_text", starlark.String(fifo)); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("read_text of an interrupted FIFO succeeded")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("read_text of a silent FIFO ignored the interrupt")
	}
}
