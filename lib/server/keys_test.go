package server

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCollectAPIKeys(t *testing.T) {
	f := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(f, []byte("# team keys\ntml-file-1\n\n  tml-file-2  \n"), 0o600)
	got, err := CollectAPIKeys([]string{"tml-flag"}, f, " tml-env-1, ,tml-env-2")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"tml-flag", "tml-file-1", "tml-file-2", "tml-env-1", "tml-env-2"}
	if !slices.Equal(got, want) {
		t.Errorf("keys = %q, want %q", got, want)
	}
	if _, err := CollectAPIKeys([]string{"tml-a b"}, "", ""); err == nil || strings.Contains(err.Error(), "tml-a") {
		t.Errorf("a key with a space: %v", err)
	}
	if _, err := CollectAPIKeys(nil, filepath.Join(t.TempDir(), "missing"), ""); err == nil {
		t.Error("a missing key file was accepted")
	}
}
