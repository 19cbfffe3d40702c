package builtins

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
