package peft

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// WriteFiles replaces an existing checkpoint whole, marker included, and
// leaves no temporary or set-aside sibling behind.
func TestWriteFilesReplaces(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "ck")
	write := func(body string) error {
		return WriteFiles(dir, []File{{"a.txt", func(w io.Writer) error { _, err := io.WriteString(w, body); return err }}})
	}
	if err := write("one"); err != nil {
		t.Fatal(err)
	}
	if err := write("two"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "two" {
		t.Fatalf("a.txt = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, CompleteFile)); err != nil {
		t.Errorf("marker: %v", err)
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 1 {
		t.Errorf("parent holds %d entries, want only ck", len(entries))
	}
	// A failing write leaves the old checkpoint as it was.
	if err := WriteFiles(dir, []File{{"a.txt", func(io.Writer) error { return io.ErrUnexpectedEOF }}}); err == nil {
		t.Fatal("a failing write succeeded")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "two" {
		t.Errorf("after a failed write a.txt = %q, want the old copy", b)
	}
}

// A write killed midway leaves its temporary directory; the next write of
// the same checkpoint removes it (unless a live writer holds it).
func TestWriteFilesSweepsAbandonedTemp(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "ck")
	abandoned := filepath.Join(parent, ".ck.tmp-123")
	os.Mkdir(abandoned, 0o755)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(abandoned, old, old)
	if err := WriteFiles(dir, []File{{"a.txt", func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }}}); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("parent holds %d entries, want only ck", len(entries))
	}
}
