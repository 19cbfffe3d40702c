package ops

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A saved trace is an ordinary file: its mode follows the umask (0644
// under the usual 022), as the official CLI's plain open() gives.
func TestSaveTraceFollowsTheUmask(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("trace bytes"))
	}))
	defer srv.Close()
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	for _, tc := range []struct {
		umask int
		want  os.FileMode
	}{{0o022, 0o644}, {0o077, 0o600}, {0o002, 0o664}} {
		syscall.Umask(tc.umask)
		dest := filepath.Join(t.TempDir(), "s.pftrace")
		n, err := SaveTrace(context.Background(), srv.URL, dest, nil)
		if err != nil || n != int64(len("trace bytes")) {
			t.Fatalf("SaveTrace = %d, %v", n, err)
		}
		fi, err := os.Stat(dest)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != tc.want {
			t.Errorf("umask %03o: mode %03o, want %03o", tc.umask, got, tc.want)
		}
	}
}

// The storage host's "try again" (503) is retried like a checkpoint
// download's, and a failure that lasts leaves no file behind.
func TestSaveTraceRetriesAndLeavesNothingOnFailure(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("trace bytes"))
	}))
	defer srv.Close()
	dest := filepath.Join(t.TempDir(), "s.pftrace")
	n, err := SaveTrace(context.Background(), srv.URL, dest, nil)
	if err != nil || n != int64(len("trace bytes")) || calls != 2 {
		t.Fatalf("SaveTrace = %d, %v after %d requests; want the second answer saved", n, err, calls)
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	defer gone.Close()
	dir := t.TempDir()
	_, err = SaveTrace(context.Background(), gone.URL, filepath.Join(dir, "t.pftrace"), nil)
	if err == nil || err.Error() != "Failed to download trace: HTTP Error 404: Not Found" {
		t.Fatalf("404: err = %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a failed download left %d file(s)", len(ents))
	}
}
