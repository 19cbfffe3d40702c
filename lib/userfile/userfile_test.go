package userfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func mkfifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// zeroDevice makes a node of /dev/zero's device numbers (1, 5) in a
// temporary directory; it needs root.
func zeroDevice(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "zero")
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|5); err != nil {
		t.Skipf("mknod needs root here: %v", err)
	}
	return p
}

// within fails the test if f has not returned after a generous while: the
// bug it pins is an open or read that never returns.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("still blocked")
	}
}

// TestRegularRefusesSpecialFiles: where a regular file is needed, a FIFO
// (with no writer, whose plain open never returns) and a device are
// refused at once with an error saying what they are.
func TestRegularRefusesSpecialFiles(t *testing.T) {
	for name, p := range map[string]string{"FIFO": mkfifo(t), "device": zeroDevice(t), "directory": t.TempDir()} {
		within(t, func() {
			_, err := ReadFile(p, 1<<20)
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: err = %v", name, err)
			}
		})
	}
}

// TestReadAnyBounds: a device that never ends and a FIFO fed forever are
// read up to the limit, then refused; a regular file past the limit is
// refused before it is read.
func TestReadAnyBounds(t *testing.T) {
	fifo := mkfifo(t)
	// Opened read-write the FIFO has a writer from now on, so the reader
	// never sees an end; closing it stops the feeding goroutine.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	go func() {
		buf := make([]byte, 1<<16)
		for {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}()
	big := filepath.Join(t.TempDir(), "big")
	os.WriteFile(big, make([]byte, 5000), 0o644)
	for name, p := range map[string]string{"device": zeroDevice(t), "fed FIFO": fifo, "file": big} {
		within(t, func() {
			_, err := ReadAny(context.Background(), p, 4096)
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("%s: err = %v, want ErrTooLarge", name, err)
			}
		})
	}
}

// TestReadAnyCancel: a FIFO whose writer is connected but silent is
// waited on until the context is cancelled (Ctrl-C), then the read ends.
func TestReadAnyCancel(t *testing.T) {
	fifo := mkfifo(t)
	opened := make(chan *os.File, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			opened <- w
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		w := <-opened
		defer w.Close()
		time.Sleep(100 * time.Millisecond)
		cancel()
		time.Sleep(time.Minute) // stays silent and connected
	}()
	within(t, func() {
		// The writer may connect after the open; read until it has.
		for ctx.Err() == nil {
			if _, err := ReadAny(ctx, fifo, 4096); err != nil {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v, want context.Canceled", err)
				}
				return
			}
		}
	})
}
