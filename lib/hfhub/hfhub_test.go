package hfhub

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

func TestTokenizerIDForModel(t *testing.T) {
	cases := map[string]string{
		"meta-llama/Llama-3.1-8B":                    "thinkingmachineslabinc/meta-llama-3-instruct-tokenizer",
		"meta-llama/Llama-3.2-1B:peft:123":           "thinkingmachineslabinc/meta-llama-3-instruct-tokenizer",
		"Qwen/Qwen3-8B":                              "Qwen/Qwen3-8B",
		"Qwen/Qwen3-30B-A3B-Base:latest":             "Qwen/Qwen3-30B-A3B-Base",
		"openai/gpt-oss-20b":                         "openai/gpt-oss-20b",
		"deepseek-ai/DeepSeek-V3.1":                  "deepseek-ai/DeepSeek-V3.1",
		"moonshotai/Kimi-K2.5-Text-Only":             "moonshotai/Kimi-K2.5",
		"org/model/variant":                          "org/model",
		"nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
	}
	for in, want := range cases {
		if got := TokenizerIDForModel(in); got != want {
			t.Errorf("TokenizerIDForModel(%q) = %q, want %q", in, got, want)
		}
	}
	if _, rev := TokenizerRefForModel("moonshotai/Kimi-K2-Thinking"); rev != "612681931a8c906ddb349f8ad0f582cb552189cd" {
		t.Errorf("Kimi revision = %q", rev)
	}
}

const commit = "0123456789abcdef0123456789abcdef01234567"

// fakeHub serves files laid out like the Hub's /{repo}/resolve/{rev}/{file},
// with the large file behind a redirect to a CDN path (as LFS files are).
type fakeHub struct {
	files    map[string]string // "org/name/file" → content
	token    string            // required bearer token, if any
	requests atomic.Int32
}

func (f *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	if strings.HasPrefix(r.URL.Path, "/cdn/") {
		if r.Header.Get("Authorization") != "" {
			http.Error(w, "token leaked to CDN", http.StatusBadRequest)
			return
		}
		w.Write([]byte(f.files[strings.TrimPrefix(r.URL.Path, "/cdn/")]))
		return
	}
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 5)
	if len(parts) != 5 || parts[2] != "resolve" || parts[3] != "main" {
		http.NotFound(w, r)
		return
	}
	key := parts[0] + "/" + parts[1] + "/" + parts[4]
	body, ok := f.files[key]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	if parts[4] == "tokenizer.json" { // LFS-style
		w.Header().Set("X-Linked-Etag", `"lfs-etag-1"`)
		http.Redirect(w, r, "/cdn/"+key, http.StatusFound)
		return
	}
	w.Header().Set("ETag", `W/"etag-`+parts[4]+`"`)
	w.Write([]byte(body))
}

func newHub(t *testing.T, f *fakeHub) (*Hub, *httptest.Server) {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return &Hub{Endpoint: srv.URL, CacheDir: t.TempDir(), Client: srv.Client()}, srv
}

func TestResolveDownloadsIntoHFCacheLayout(t *testing.T) {
	f := &fakeHub{files: map[string]string{
		"org/tok/tokenizer.json":        `{"model":{}}`,
		"org/tok/tokenizer_config.json": `{"eos_token":"x"}`,
	}}
	h, _ := newHub(t, f)
	var progressed int64
	h.Progress = func(file string, done, total int64) {
		if file == "tokenizer_config.json" {
			progressed = done
		}
	}
	dir, err := h.Resolve(context.Background(), "org/tok", "main")
	if err != nil {
		t.Fatal(err)
	}
	if progressed != int64(len(`{"eos_token":"x"}`)) {
		t.Errorf("progress reported %d bytes", progressed)
	}
	wantDir := filepath.Join(h.CacheDir, "models--org--tok", "snapshots", commit)
	if dir != wantDir {
		t.Fatalf("dir = %s, want %s", dir, wantDir)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil || string(b) != `{"model":{}}` {
		t.Fatalf("tokenizer.json = %q, %v", b, err)
	}
	link, err := os.Readlink(filepath.Join(dir, "tokenizer.json"))
	if err != nil || link != filepath.Join("..", "..", "blobs", "lfs-etag-1") {
		t.Fatalf("tokenizer.json link = %q, %v", link, err)
	}
	if _, err := os.Stat(filepath.Join(h.CacheDir, "models--org--tok", "blobs", "etag-tokenizer_config.json")); err != nil {
		t.Fatalf("config blob: %v", err)
	}
	ref, _ := os.ReadFile(filepath.Join(h.CacheDir, "models--org--tok", "refs", "main"))
	if string(ref) != commit {
		t.Fatalf("refs/main = %q", ref)
	}
	if _, err := os.Stat(filepath.Join(dir, "chat_template.jinja")); !os.IsNotExist(err) {
		t.Fatalf("optional missing file should be absent: %v", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(h.CacheDir, "models--org--tok", "blobs", "*.incomplete"))
	if len(leftovers) > 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}

	// Second resolve: served from the cache, no requests.
	before := f.requests.Load()
	if dir2, err := h.Resolve(context.Background(), "org/tok", "main"); err != nil || dir2 != dir {
		t.Fatalf("cached resolve = %s, %v", dir2, err)
	}
	if f.requests.Load() != before {
		t.Fatal("cached resolve hit the network")
	}
	// Offline with a cache works.
	h.Offline = true
	if _, err := h.Resolve(context.Background(), "org/tok", "main"); err != nil {
		t.Fatalf("offline cached: %v", err)
	}
}

// A Kimi repo has tiktoken.model instead of tokenizer.json: Resolve fetches
// it when tokenizer.json is missing, the cache counts it as a snapshot, and a
// repo with neither is refused naming tokenizer.json.
func TestResolveTiktokenModel(t *testing.T) {
	f := &fakeHub{files: map[string]string{
		"org/kimi/tiktoken.model":        "IQ== 0\n",
		"org/kimi/tokenizer_config.json": `{"tokenizer_class":"TikTokenTokenizer"}`,
		"org/both/tokenizer.json":        "{}",
		"org/both/tiktoken.model":        "IQ== 0\n",
		"org/none/tokenizer_config.json": "{}",
	}}
	h, _ := newHub(t, f)
	dir, err := h.Resolve(context.Background(), "org/kimi", "main")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "tiktoken.model")); err != nil || string(b) != "IQ== 0\n" {
		t.Fatalf("tiktoken.model = %q, %v", b, err)
	}
	h.Offline = true
	if dir2, err := h.Resolve(context.Background(), "org/kimi", "main"); err != nil || dir2 != dir {
		t.Fatalf("offline resolve of the cached tiktoken repo = %s, %v", dir2, err)
	}
	h.Offline = false
	dir, err = h.Resolve(context.Background(), "org/both", "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tiktoken.model")); !os.IsNotExist(err) {
		t.Errorf("tiktoken.model fetched although tokenizer.json is there: %v", err)
	}
	if _, err := h.Resolve(context.Background(), "org/none", "main"); err == nil || !strings.Contains(err.Error(), "no tokenizer.json") {
		t.Errorf("repo without a vocabulary: %v", err)
	}
}

func TestResolveErrors(t *testing.T) {
	f := &fakeHub{token: "hf_secret", files: map[string]string{"org/tok/tokenizer.json": "{}"}}
	h, _ := newHub(t, f)
	ctx := context.Background()

	_, err := h.Resolve(ctx, "org/tok", "main")
	if err == nil || !strings.Contains(err.Error(), "HF_TOKEN") || !strings.Contains(err.Error(), "org/tok") {
		t.Fatalf("no token: %v", err)
	}
	h.Token = "hf_secret"
	if _, err := h.Resolve(ctx, "org/tok", "main"); err != nil {
		t.Fatalf("with token: %v", err)
	}
	_, err = h.Resolve(ctx, "org/missing", "main")
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "org/missing") {
		t.Fatalf("missing repo: %v", err)
	}
	if strings.Contains(err.Error(), "hf_secret") {
		t.Fatal("error leaks the token")
	}
	h.Offline = true
	_, err = h.Resolve(ctx, "org/other", "main")
	if err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("offline: %v", err)
	}
	if _, err := h.Resolve(ctx, "../etc", "main"); err == nil {
		t.Fatal("accepted a path-like repo id")
	}
}

func TestFromEnv(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", "")
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:9/")
	t.Setenv("HF_HUB_OFFLINE", "1")
	os.WriteFile(filepath.Join(home, "token"), []byte("hf_file\n"), 0o600)
	h := FromEnv()
	if h.CacheDir != filepath.Join(home, "hub") || h.Token != "hf_file" || !h.Offline || h.Endpoint != "http://127.0.0.1:9" {
		t.Fatalf("FromEnv = %+v", *h)
	}
	t.Setenv("HF_HUB_CACHE", "/x/cache")
	t.Setenv("HF_TOKEN", "hf_env")
	if h := FromEnv(); h.CacheDir != "/x/cache" || h.Token != "hf_env" {
		t.Fatalf("FromEnv overrides = %+v", *h)
	}
}
