package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	for _, s := range []string{"first", "second"} {
		if err := WriteFile(p, []byte(s)); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(p); string(got) != s {
			t.Fatalf("%s holds %q, want %q", p, got, s)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("the directory holds %d entries, want only state.json", len(es))
	}
}

// A leftover path+".tmp" (say a directory another tool made) does not
// stop the write: the temporary name is unique, not fixed.
func TestWriteFileIgnoresFixedTempName(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "metrics.jsonl")
	if err := os.Mkdir(p+".tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("x\n")); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
}

// A failed write leaves the old file as it was and no temporary behind.
func TestWriteFileFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	os.WriteFile(p, []byte("old"), 0o644)
	if err := WriteFile(filepath.Join(p, "sub"), []byte("new")); err == nil {
		t.Fatal("writing below a file succeeded")
	}
	if got, _ := os.ReadFile(p); string(got) != "old" {
		t.Errorf("config.json holds %q", got)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("the directory holds %d entries after a failed write", len(es))
	}
}
