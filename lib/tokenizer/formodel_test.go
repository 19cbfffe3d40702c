package tokenizer

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
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
	if _, err := ForModel(context.Background(), "thinkingmachines/Inkling"); err == nil || !strings.Contains(err.Error(), "private") {
		t.Errorf("Inkling: err = %v", err)
	}
	_, err = ForModel(context.Background(), "nobody/missing-model")
	if err == nil || !strings.Contains(err.Error(), "nobody/missing-model") {
		t.Fatalf("missing model error: %v", err)
	}
}

// A Kimi repo on the Hub has tiktoken.model and no tokenizer.json: ForModel
// downloads the rank file into the cache and loads it with LoadTiktoken.
func TestForModelKimiTiktoken(t *testing.T) {
	toks := syntheticRanks(rand.New(rand.NewPCG(9, 9)))
	files := map[string][]byte{TiktokenFile: rankFile(toks), "tokenizer_config.json": kimiConfig(len(toks))}
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, filepath.Base(r.URL.Path))
		b, ok := files[filepath.Base(r.URL.Path)]
		if !ok || !strings.HasPrefix(r.URL.Path, "/moonshotai/Kimi-K2.6/resolve/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Repo-Commit", "2222222222222222222222222222222222222222")
		w.Write(b)
	}))
	defer srv.Close()
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_TOKEN", "")
	tk, err := ForModel(context.Background(), "moonshotai/Kimi-K2.6")
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := tk.TokenID("<|im_end|>"); !ok || id != len(toks)+2 || tk.ID() != "moonshotai/Kimi-K2.6" {
		t.Fatalf("im_end = %d %v, id %q", id, ok, tk.ID())
	}
	if !slices.Equal(asked[:2], []string{"tokenizer.json", TiktokenFile}) {
		t.Errorf("requests %v: want tokenizer.json, then tiktoken.model", asked)
	}
}
