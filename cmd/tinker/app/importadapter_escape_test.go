package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportAdapterEscapesNames: a directory name holding an escape
// sequence reaches the terminal escaped, in the error and its cause.
func TestImportAdapterEscapesNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ad\x1b]0;pwned\x07\x1b[2J")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run("", "serve", "import-adapter", dir, "--base-model", "tinker-local/tiny-llama", "--data", t.TempDir())
	if code == 0 || !strings.Contains(errs, "not an adapter directory") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if strings.ContainsAny(out+errs, "\x1b\x07") {
		t.Errorf("raw control characters printed: %q", errs)
	}
}
