package tokenizer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// ForModel downloads through a loopback Hub once, then serves the process
// cache; the tokenizer id is the repo id.
func TestForModelDownloadsOnceAndCaches(t *testing.T) {
	dir := familyDir(t, family{"qwen3"})
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		name := filepath.Base(r.URL.Path)
		if !strings.HasPrefix(r.URL.Path, "/Qwen/Qwen3-8B/resolve/main/") {
			http.NotFound(w, r)
			return
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Repo-Commit", "1111111111111111111111111111111111111111")
		w.Write(b)
	}))
	defer srv.Close()
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_TOKEN", "")

	tk, err := ForModel(context.Background(), "Qwen/Qwen3-8B")
	if err != nil {
		t.Fatal(err)
	}
	if tk.ID() != "Qwen/Qwen3-8B" || len(tk.Encode("hello world", true)) != 2 {
		t.Fatalf("id %q, encode %v", tk.ID(), tk.Encode("hello world", true))
	}
	n := hits.Load()
	tk2, err := ForModel(context.Background(), "Qwen/Qwen3-8B:some-suffix")
	if err != nil || tk2 != tk || hits.Load() != n {
		t.Fatalf("second ForModel: same=%v err=%v requests %d→%d", tk2 == tk, err, n, hits.Load())
	}
	for _, m := range []string{"moonshotai/Kimi-K2-Thinking", "thinkingmachines/Inkling"} {
		if _, err := ForModel(context.Background(), m); err == nil || !strings.Contains(err.Error(), "not") {
			t.Errorf("%s: err = %v", m, err)
		}
	}
	_, err = ForModel(context.Background(), "nobody/missing-model")
	if err == nil || !strings.Contains(err.Error(), "nobody/missing-model") {
		t.Fatalf("missing model error: %v", err)
	}
}
