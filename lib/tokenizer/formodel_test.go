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
	fakeHub(t, "/Qwen/Qwen3-8B/resolve/main/", func(name string) ([]byte, bool) {
		hits.Add(1)
		b, err := os.ReadFile(filepath.Join(dir, name))
		return b, err == nil
	})
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
	fakeHub(t, "/moonshotai/Kimi-K2.6/resolve/", func(name string) ([]byte, bool) {
		asked = append(asked, name)
		b, ok := files[name]
		return b, ok
	})
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

// fakeHub serves a Hugging Face Hub on loopback for the test: file gives a
// file's contents by name under prefix (404 otherwise); the environment
// points hfhub at it with an empty cache.
func fakeHub(t *testing.T, prefix string, file func(name string) ([]byte, bool)) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := file(filepath.Base(r.URL.Path))
		if !ok || !strings.HasPrefix(r.URL.Path, prefix) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Repo-Commit", "1111111111111111111111111111111111111111")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_TOKEN", "")
}
