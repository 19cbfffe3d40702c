package export

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// TestWriteFailureKeepsOldOut: a write that fails midway (here a file
// size limit, as a full disk would) fails the export with one line,
// leaves the old OUT as it was and no temporary directory. The export runs
// in a child process so that the limit does not reach other tests.
func TestWriteFailureKeepsOldOut(t *testing.T) {
	if dir := os.Getenv("EXPORT_FSIZE_CHILD"); dir != "" {
		fsizeChild(dir)
		return
	}
	model := models.TinyLlama
	dir := t.TempDir()
	base := writeBase(t, baseSpec{model: model, tied: true, shards: 1, dtype: safetensors.F32})
	ad := writeAdapter(t, adapterSpec{model: model, rank: 2, alpha: 4, modules: allModules, dtype: safetensors.F32, seed: 9})
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	writeFile(t, out, "old", []byte("old"))
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFailureKeepsOldOut$")
	cmd.Env = append(os.Environ(), "EXPORT_FSIZE_CHILD="+strings.Join([]string{base, ad, out}, string(os.PathListSeparator)))
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, msg)
	}
	if !strings.Contains(string(msg), "export error: write model.safetensors: ") || strings.Count(string(msg), "export error") != 1 {
		t.Errorf("child said %q, want the failed write", msg)
	}
	if b, err := os.ReadFile(filepath.Join(out, "old")); err != nil || string(b) != "old" {
		t.Errorf("old OUT damaged: %q %v", b, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("left behind: %v", left)
	}
}

// fsizeChild runs an export under a 64 KiB file size limit.
func fsizeChild(arg string) {
	p := filepath.SplitList(arg)
	signal.Ignore(syscall.SIGXFSZ) // the write fails with EFBIG instead
	lim := syscall.Rlimit{Cur: 64 << 10, Max: 64 << 10}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println("setrlimit:", err)
		return
	}
	_, err := Export(context.Background(), Options{Adapter: p[1], Base: p[0], Out: p[2], Force: true})
	fmt.Printf("export error: %v\n", err)
}
