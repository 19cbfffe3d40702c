package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeString(path, s string) error {
	return Write(path, 0, func(w io.Writer) error { _, err := io.WriteString(w, s); return err })
}

// TestWriteNeverReplacesSpecialFiles: a device node (made here with /dev/null's
// numbers) and a FIFO with a reader receive the bytes and stay what they
// were; a FIFO nobody reads is an error, not a hang and not a file.
func TestWriteNeverReplacesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	null := filepath.Join(dir, "null")
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skipf("mknod needs root here: %v", err)
	}
	if err := writeString(null, "x"); err != nil {
		t.Errorf("write to a device: %v", err)
	}
	if st, _ := os.Lstat(null); st.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("the device node became %v", st.Mode())
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeString(fifo, "x"); err == nil || !strings.Contains(err.Error(), "nothing reads") {
		t.Errorf("write to a FIFO without a reader: %v", err)
	}
	got := make(chan string)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	var err error
	// Until the reader has opened its end: bounded by time, not by tries,
	// since the reader's goroutine may not run for a while on a busy machine.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if err = writeString(fifo, "through"); err == nil || !strings.Contains(err.Error(), "nothing reads") {
			break
		}
	}
	if err != nil {
		t.Fatalf("write to a FIFO with a reader: %v", err)
	}
	if s := <-got; s != "through" {
		t.Errorf("the reader got %q", s)
	}
	if st, _ := os.Lstat(fifo); st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO became %v", st.Mode())
	}
}

// TestWriteKeepsModeAndLinks: a 0600 file stays 0600; a symbolic link
// stays a link and its target gets the bytes.
func TestWriteKeepsModeAndLinks(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("old"), 0o600)
	if err := writeString(secret, "new"); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(secret); st.Mode().Perm() != 0o600 {
		t.Errorf("mode after the write: %v", st.Mode().Perm())
	}
	link := filepath.Join(dir, "link")
	os.Symlink("secret", link)
	if err := writeString(link, "via link"); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a file")
	}
	if b, _ := os.ReadFile(secret); string(b) != "via link" {
		t.Errorf("the target holds %q", b)
	}
	dangling := filepath.Join(dir, "dangling")
	os.Symlink("nowhere/x", dangling)
	if err := writeString(dangling, "x"); err == nil {
		t.Error("a write through a dangling link succeeded")
	}
}

// TestWriteThroughProcLink: a link into /proc (as /dev/stdout is) names a
// file this process has open; it is appended to, never replaced (a
// replaced file would leave the open descriptor writing to a deleted one).
func TestWriteThroughProcLink(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("a\n")
	link := filepath.Join(dir, "stdout")
	if err := os.Symlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), link); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(link); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	before, _ := os.Stat(f.Name())
	if err := writeString(link, "b\n"); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(f.Name())
	if !os.SameFile(before, after) {
		t.Error("the open file was replaced")
	}
	if b, _ := os.ReadFile(f.Name()); string(b) != "a\nb\n" {
		t.Errorf("the file holds %q", b)
	}
}

// TestSymlinkReplaces: a link replaces an old link (or a file) in one
// rename and leaves no temporary link behind.
func TestSymlinkReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ref")
	os.WriteFile(p, []byte("a file"), 0o644)
	for _, to := range []string{"blob1", "blob2"} {
		if err := Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.Readlink(p); got != to {
			t.Errorf("ref -> %q, want %q", got, to)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("left: %v", es)
	}
}
