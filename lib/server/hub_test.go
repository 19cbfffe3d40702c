package server

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/hfhub"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// TestHubServesTinyTokenizers: the Hub downloader, pointed at the server,
// fetches the tokenizer that get_info names for a tiny model into a Hub
// cache, and it encodes like the built-in one. HEAD carries what
// huggingface_hub reads; missing files and repos have the Hub's error codes.
func TestHubServesTinyTokenizers(t *testing.T) {
	e := newEnv(t, "", Options{})
	arch, _ := models.Lookup(models.TinyQwen3)
	cache := t.TempDir()
	hub := &hfhub.Hub{Endpoint: e.url, CacheDir: cache, Client: http.DefaultClient}
	dir, err := hub.Resolve(context.Background(), arch.TokenizerID, "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tokenizer_config.json")); err != nil {
		t.Error(err)
	}
	got, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := tokenizer.Tiny()
	text := "Hi <eos> é"
	if a, b := got.Encode(text, false), want.Encode(text, false); !slices.Equal(a, b) {
		t.Errorf("served tokenizer encodes %v, built-in %v", a, b)
	}

	req, _ := http.NewRequest("HEAD", e.url+"/"+arch.TokenizerID+"/resolve/main/tokenizer.json", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(resp.Header.Get("X-Repo-Commit")) != 40 || resp.Header.Get("ETag") == "" || resp.ContentLength != int64(len(tokenizer.TinyJSON())) {
		t.Errorf("HEAD = %d %v", resp.StatusCode, resp.Header)
	}
	for path, code := range map[string]string{
		"/" + arch.TokenizerID + "/resolve/main/special_tokens_map.json": "EntryNotFound",
		"/" + arch.TokenizerID + "/resolve/v9/tokenizer.json":            "RevisionNotFound",
		"/Qwen/Qwen3-8B/resolve/main/tokenizer.json":                     "RepoNotFound",
	} {
		resp, err := http.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 || resp.Header.Get("X-Error-Code") != code {
			t.Errorf("GET %s = %d %s, want 404 %s", path, resp.StatusCode, resp.Header.Get("X-Error-Code"), code)
		}
	}
}
