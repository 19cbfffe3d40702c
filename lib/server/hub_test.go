package server

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/engine"
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

// TestHubModelDirConfined: a model directory's files are served only from
// inside its repo root. A symlink out of it (tokenizer_config.json ->
// a secret) is not served, while a Hugging Face cache snapshot's symlinks
// into ../../blobs are.
func TestHubModelDirConfined(t *testing.T) {
	root := t.TempDir()
	secret := filepath.Join(root, "secret.txt")
	must(t, os.WriteFile(secret, []byte("SECRET-CONTENT"), 0o600))
	plain := filepath.Join(root, "plain")
	must(t, os.MkdirAll(plain, 0o755))
	must(t, os.WriteFile(filepath.Join(plain, "tokenizer.json"), tokenizer.TinyJSON(), 0o644))
	must(t, os.Symlink(secret, filepath.Join(plain, "tokenizer_config.json")))
	must(t, os.Symlink("../secret.txt", filepath.Join(plain, "chat_template.jinja")))

	repo := filepath.Join(root, "hub", "models--me--cached")
	snap := filepath.Join(repo, "snapshots", "0123abcd")
	must(t, os.MkdirAll(snap, 0o755))
	must(t, os.MkdirAll(filepath.Join(repo, "blobs"), 0o755))
	must(t, os.WriteFile(filepath.Join(repo, "blobs", "b1"), tokenizer.TinyJSON(), 0o644))
	must(t, os.Symlink("../../blobs/b1", filepath.Join(snap, "tokenizer.json")))
	must(t, os.Symlink(secret, filepath.Join(snap, "special_tokens_map.json")))

	pool := &engine.Pool{Dirs: map[string]string{"me/plain": plain, "me/cached": snap + "/"}}
	e := newEnv(t, "", Options{Engine: pool})
	for path, want := range map[string]int{
		"/me/plain/resolve/main/tokenizer.json":           200,
		"/me/plain/resolve/main/tokenizer_config.json":    404,
		"/me/plain/resolve/main/chat_template.jinja":      404,
		"/me/cached/resolve/main/tokenizer.json":          200,
		"/me/cached/resolve/main/special_tokens_map.json": 404,
	} {
		code, body, _ := e.do("GET", path, nil)
		if code != want || strings.Contains(string(body), "SECRET") {
			t.Errorf("GET %s = %d %.80s, want %d without the secret", path, code, body, want)
		}
	}
	code, body, _ := e.do("GET", "/api/models/me/plain", nil)
	if code != 200 || strings.Contains(string(body), "tokenizer_config") {
		t.Errorf("file list = %d %s, want only files inside the repo", code, body)
	}
}

// TestHubHonoursAPIKeys: with keys configured, the Hub endpoints answer
// only requests bearing one (as HF_TOKEN, a bearer token, or X-API-Key).
func TestHubHonoursAPIKeys(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), tokenizer.TinyJSON(), 0o644))
	pool := &engine.Pool{Dirs: map[string]string{"me/private": dir}}
	e := newEnv(t, "", Options{Engine: pool, APIKeys: []string{key}})
	arch, _ := models.Lookup(models.TinyQwen3)
	for _, path := range []string{"/me/private/resolve/main/tokenizer.json", "/api/models/me/private", "/" + arch.TokenizerID + "/resolve/main/tokenizer.json"} {
		for name, hdr := range map[string][]string{
			"no key":        {"X-API-Key", ""},
			"wrong bearer":  {"X-API-Key", "", "Authorization", "Bearer tml-someone-else"},
			"wrong api key": {"X-API-Key", "tml-someone-else"},
		} {
			if code, body, _ := e.do("GET", path, nil, hdr...); code != 401 || strings.Contains(string(body), "tokenizer_class") || strings.Contains(string(body), "siblings") {
				t.Errorf("%s: GET %s = %d %.60s, want 401", name, path, code, body)
			}
		}
		if code, _, _ := e.do("GET", path, nil, "X-API-Key", "", "Authorization", "Bearer "+key); code != 200 {
			t.Errorf("bearer key: GET %s = %d, want 200", path, code)
		}
		if code, _, _ := e.do("GET", path, nil); code != 200 {
			t.Errorf("X-API-Key: GET %s = %d, want 200", path, code)
		}
	}
	hub := &hfhub.Hub{Endpoint: e.url, CacheDir: t.TempDir(), Client: http.DefaultClient, Token: key}
	if _, err := hub.Resolve(context.Background(), "me/private", "main"); err != nil {
		t.Errorf("download with HF_TOKEN = the API key: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
