package server

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFullDisk fills a small tmpfs holding the data directory: saves answer
// 507 at once, and deletes still work, also after a restart. It needs root
// to mount the tmpfs.
func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: mounting a tmpfs to fill needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("skipped: cannot mount a tmpfs (%v: %s)", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	dir := filepath.Join(mnt, "data")
	e := newHostileEnvIn(t, dir, Options{Logf: t.Logf})
	var paths []string
	for _, n := range []string{"a", "b", "c"} {
		paths = append(paths, e.save("save_weights", n))
	}
	fill(t, filepath.Join(mnt, "filler"))
	if code, b, _ := e.do("POST", "/api/v1/save_weights", map[string]any{"model_id": e.model, "path": "d"}); code != 507 || !strings.Contains(string(b), "disk") {
		t.Errorf("save on a full disk = %d %s, want 507", code, b)
	}
	if code, b, _ := e.do("POST", "/api/v1/create_session", map[string]any{}); code != 200 && code != 507 {
		t.Errorf("create_session on a full disk = %d %s, want 200 or 507", code, b)
	}
	del := func(p string) (int, string) {
		code, b, _ := e.do("DELETE", "/api/v1/training_runs/"+strings.Replace(strings.TrimPrefix(p, "tinker://"), "/", "/checkpoints/", 1), nil)
		return code, string(b)
	}
	if code, b := del(paths[0]); code != 200 {
		t.Errorf("delete on a full disk = %d %s", code, b)
	}
	// Fill again (the delete freed space), restart, and delete once more.
	fill(t, filepath.Join(mnt, "filler2"))
	e.srv.Close()
	s, err := Open(Options{DataDir: dir, SweepInterval: -1, APIKeys: []string{key, keyB}, Now: e.clk.Now})
	if err != nil {
		t.Fatalf("reopen on a full disk: %v", err)
	}
	e.restart(s)
	if code, b := del(paths[1]); code != 200 {
		t.Errorf("delete after a restart on a full disk = %d %s", code, b)
	}
	os.Remove(filepath.Join(mnt, "filler"))
	os.Remove(filepath.Join(mnt, "filler2"))
	if code, b := del(paths[2]); code != 200 {
		t.Errorf("delete after space returned = %d %s", code, b)
	}
	if _, err := os.Stat(filepath.Join(dir, reserveName)); err != nil {
		t.Errorf("the spare file was not made again once space returned: %v", err)
	}
}

// fill writes to p until the file system is full.
func fill(t *testing.T, p string) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
	if f == nil {
		return
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}
