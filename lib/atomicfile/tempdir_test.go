package atomicfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// age makes p look older than staleAge.
func age(t *testing.T, p string) {
	t.Helper()
	old := time.Now().Add(-2 * staleAge)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestSweepStaleKeepsLiveAndYoung(t *testing.T) {
	if !lockSupported {
		t.Skip("no directory locks on this platform: SweepStale removes nothing")
	}
	parent := t.TempDir()
	live, err := MkdirTemp(parent, ".ck.tmp-")
	if err != nil {
		t.Fatal(err)
	}
	age(t, live.Path)
	young := filepath.Join(parent, ".ck.tmp-young")
	os.Mkdir(young, 0o755)
	abandoned := filepath.Join(parent, ".ck.tmp-abandoned")
	os.Mkdir(abandoned, 0o755)
	os.WriteFile(filepath.Join(abandoned, "f"), []byte("x"), 0o644)
	age(t, abandoned)
	other := filepath.Join(parent, ".other.tmp-1")
	os.Mkdir(other, 0o755)
	age(t, other)

	n, err := SweepStale(parent, ".ck.tmp-")
	if err != nil || n != 1 {
		t.Fatalf("SweepStale = %d, %v; want 1 removed", n, err)
	}
	if exists(abandoned) {
		t.Error("the abandoned directory is still there")
	}
	for _, p := range []string{live.Path, young, other} {
		if !exists(p) {
			t.Errorf("%s was removed", filepath.Base(p))
		}
	}
	live.Release()
	if n, _ := SweepStale(parent, ".ck.tmp-"); n != 1 || exists(live.Path) {
		t.Errorf("after Release, SweepStale = %d and the directory exists = %v", n, exists(live.Path))
	}
}

// TestSweepStaleAfterKill: a process killed while it holds a temporary
// directory leaves it behind; its lock dies with it, so a sweep removes it.
func TestSweepStaleAfterKill(t *testing.T) {
	if !lockSupported {
		t.Skip("no directory locks on this platform: SweepStale removes nothing")
	}
	if parent := os.Getenv("ATOMICFILE_HOLDER"); parent != "" {
		td, err := MkdirTemp(parent, ".ck.tmp-")
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(td.Path + "\n")
		time.Sleep(time.Minute) // killed long before
		os.Exit(0)
	}
	parent := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSweepStaleAfterKill$")
	cmd.Env = append(os.Environ(), "ATOMICFILE_HOLDER="+parent)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	k, _ := out.Read(buf)
	path := strings.TrimSpace(string(buf[:k]))
	if !exists(path) {
		cmd.Process.Kill()
		t.Fatalf("holder printed %q", path)
	}
	age(t, path)
	if n, _ := SweepStale(parent, ".ck.tmp-"); n != 0 {
		t.Fatalf("swept a directory whose writer is alive")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if n, err := SweepStale(parent, ".ck.tmp-"); n != 1 || err != nil || exists(path) {
		t.Fatalf("after kill: SweepStale = %d, %v; directory exists = %v", n, err, exists(path))
	}
}
