package ops

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// CheckDownload is the one pre-check of a checkpoint download: scheme,
// output directory, and an existing target refused by name unless forced.
func TestCheckDownload(t *testing.T) {
	out := filepath.Join(t.TempDir(), "exports")
	path := "tinker://run/sampler_weights/final"
	target, err := CheckDownload(path, out, false)
	if want := filepath.Join(out, "run_sampler_weights_final"); err != nil || target != want {
		t.Fatalf("CheckDownload = %q, %v; want %q", target, err, want)
	}
	if st, err := os.Stat(out); err != nil || !st.IsDir() {
		t.Fatalf("output directory not created: %v", err)
	}
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = CheckDownload(path, out, false)
	var ue *tinkerapi.UserError
	if !errors.As(err, &ue) || ue.Msg != "Target directory already exists: "+target {
		t.Fatalf("existing target: %v", err)
	}
	if _, err := CheckDownload(path, out, true); err != nil {
		t.Fatalf("force: %v", err)
	}
	if _, err := CheckDownload("run/weights/1", out, false); !errors.As(err, &ue) || ue.Msg != "Invalid checkpoint path: run/weights/1" {
		t.Fatalf("no scheme: %v", err)
	}
}
