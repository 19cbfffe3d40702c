// Package hfhub finds a model's tokenizer files the way Hugging Face users
// expect: the tokenizer repo for a Tinker base model, the local Hugging Face
// cache (HF_HOME, HF_HUB_CACHE), and otherwise a download from the Hub
// (HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE) into that cache, atomically and in
// its usual layout, so huggingface_hub and this package share downloads.
//
// It also pushes a Tinker LoRA checkpoint to a model repo (Hub.Push) over
// the Hub's HTTP API: whoami, repo creation, preupload, the Git LFS batch
// API for large files and one NDJSON commit. The token is sent only to the
// Hub and never appears in an error.
package hfhub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/lazyre"
	"github.com/tinkershell/tinker/lib/models"
)

// TokenizerFiles are fetched by Resolve. One vocabulary file is required:
// tokenizer.json, or else tiktoken.model (Kimi K2's tiktoken format).
var TokenizerFiles = []string{"tokenizer.json", "tiktoken.model", "tokenizer_config.json", "chat_template.jinja"}

// vocabFiles are the alternatives of which a snapshot needs one, in the
// order they are tried.
var vocabFiles = []string{"tokenizer.json", "tiktoken.model"}

// TokenizerIDForModel returns the Hugging Face repo holding the tokenizer of
// a Tinker base model, following the Tinker SDK's fallback rules (use the
// service's get_info tokenizer_id instead when you have it).
func TokenizerIDForModel(baseModel string) string {
	id, _ := TokenizerRefForModel(baseModel)
	return id
}

// TokenizerRefForModel is TokenizerIDForModel plus the revision the SDK pins
// ("main" when it pins none).
func TokenizerRefForModel(baseModel string) (repoID, revision string) {
	name, _, _ := strings.Cut(baseModel, ":")
	family, _ := models.FamilyOf(name)
	switch {
	case family == models.Llama3 && !models.IsTiny(name):
		return "thinkingmachineslabinc/meta-llama-3-instruct-tokenizer", "main"
	case name == "moonshotai/Kimi-K2-Thinking":
		return name, "612681931a8c906ddb349f8ad0f582cb552189cd"
	case name == "moonshotai/Kimi-K2.5" || name == "moonshotai/Kimi-K2.5-Text-Only":
		return "moonshotai/Kimi-K2.5", "4d01dfe0332d63057c186e0b262165819efb6611"
	case name == "moonshotai/Kimi-K2.6":
		return name, "b5aabbfb20227ed42becbf5541dbffd213942c58"
	}
	if parts := strings.Split(name, "/"); len(parts) == 3 {
		return parts[0] + "/" + parts[1], "main"
	}
	return name, "main"
}

// Hub is a Hugging Face Hub endpoint plus a local cache.
type Hub struct {
	Endpoint string // e.g. https://huggingface.co
	Token    string // sent as a bearer token; never logged
	// TokenSource says where Token came from (an environment variable or
	// the token file's path), so an invalid token can be traced.
	TokenSource string
	CacheDir    string // the hub cache: …/huggingface/hub
	Offline     bool   // never touch the network
	Client      *http.Client
	// Progress, if set, is called as a file downloads (total is -1 when
	// the server does not say); the shell uses it for a progress bar.
	Progress func(file string, done, total int64)

	retryWait time.Duration // first pause between retries (default 1s)
}

// FromEnv configures a Hub from the environment variables huggingface_hub
// reads: HF_ENDPOINT, HF_TOKEN (or the token file of the hf CLI),
// HF_HUB_CACHE, HF_HOME, XDG_CACHE_HOME and HF_HUB_OFFLINE.
func FromEnv() *Hub {
	h := &Hub{
		Endpoint: strings.TrimRight(os.Getenv("HF_ENDPOINT"), "/"),
		CacheDir: firstEnv("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"),
		Offline:  truthy(os.Getenv("HF_HUB_OFFLINE")),
		Client:   &http.Client{Timeout: 10 * time.Minute},
	}
	if h.Endpoint == "" {
		h.Endpoint = "https://huggingface.co"
	}
	if h.CacheDir == "" {
		h.CacheDir = filepath.Join(hfHome(), "hub")
	}
	h.Token, h.TokenSource = TokenFromEnv()
	return h
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func truthy(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// Resolve returns a local directory holding repoID's tokenizer files at the
// "main" revision, from the cache or else downloaded, configured from the
// environment.
func Resolve(ctx context.Context, repoID string) (string, error) {
	return FromEnv().Resolve(ctx, repoID, "main")
}

// commitRE is compiled on first use to keep start-up fast.
var commitRE = lazyre.New(`^[0-9a-f]{40}$`)

// repoDir is the cache folder of a model repo: models--org--name.
func (h *Hub) repoDir(repoID string) string {
	return filepath.Join(h.CacheDir, "models--"+strings.ReplaceAll(repoID, "/", "--"))
}

// Cached returns the snapshot directory of repoID at revision if it holds
// tokenizer.json or tiktoken.model.
func (h *Hub) Cached(repoID, revision string) (string, bool) {
	dir := h.repoDir(repoID)
	commit := revision
	if !commitRE.MatchString(revision) {
		b, err := os.ReadFile(filepath.Join(dir, "refs", revision))
		if err != nil {
			return "", false
		}
		commit = strings.TrimSpace(string(b))
	}
	snap := filepath.Join(dir, "snapshots", commit)
	for _, name := range vocabFiles {
		if _, err := os.Stat(filepath.Join(snap, name)); err == nil {
			return snap, true
		}
	}
	return "", false
}

func validRepoID(id string) bool {
	parts := strings.Split(id, "/")
	if len(parts) > 2 || id == "" {
		return false
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || strings.ContainsAny(p, "\\ \t\n") {
			return false
		}
	}
	return true
}

// Resolve returns the snapshot directory of repoID at revision, downloading
// the tokenizer files when they are not cached.
func (h *Hub) Resolve(ctx context.Context, repoID, revision string) (string, error) {
	if !validRepoID(repoID) {
		return "", fmt.Errorf("invalid Hugging Face repo id %q (want org/name)", repoID)
	}
	if revision == "" {
		revision = "main"
	}
	if dir, ok := h.Cached(repoID, revision); ok {
		return dir, nil
	}
	if h.Offline {
		return "", fmt.Errorf("tokenizer %s is not in the Hugging Face cache %s and HF_HUB_OFFLINE is set: unset it or run `hf download %s tokenizer.json tokenizer_config.json`", repoID, h.CacheDir, repoID)
	}
	var commit string
	var vocabErr error // why the first vocabulary file is missing
	for _, name := range TokenizerFiles {
		isVocab := slices.Contains(vocabFiles, name)
		if isVocab && commit != "" {
			continue // tokenizer.json is there: tiktoken.model is not needed
		}
		c, err := h.download(ctx, repoID, revision, name)
		var nf notFound
		switch {
		case err == nil:
		case !errors.As(err, &nf):
			return "", err
		case !isVocab:
			continue // optional file
		case name != vocabFiles[len(vocabFiles)-1]:
			vocabErr = err
			continue // try the next vocabulary file
		default:
			return "", vocabErr
		}
		if commit == "" {
			commit = c
		}
	}
	if revision != commit {
		if err := writeAtomic(filepath.Join(h.repoDir(repoID), "refs", revision), []byte(commit)); err != nil {
			return "", fmt.Errorf("cache tokenizer %s: %w", repoID, err)
		}
	}
	return filepath.Join(h.repoDir(repoID), "snapshots", commit), nil
}

type notFound struct{ url string }

func (e notFound) Error() string { return "not found" }

// download fetches one file into blobs/ and links it from snapshots/<commit>/.
func (h *Hub) download(ctx context.Context, repoID, revision, name string) (commit string, err error) {
	u := fmt.Sprintf("%s/%s/resolve/%s/%s", h.Endpoint, repoID, url.PathEscape(revision), name)
	resp, meta, err := h.get(ctx, u)
	if err != nil {
		return "", fmt.Errorf("cannot download tokenizer %s from %s: %w (set HF_ENDPOINT, or put its files in %s)", repoID, h.Endpoint, err, h.CacheDir)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return "", fmt.Errorf("tokenizer %s: no %s at revision %s on %s (HTTP 404); check the repo id, or download it with `hf download %s` into %s: %w", repoID, name, revision, h.Endpoint, repoID, h.CacheDir, notFound{u})
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		hint := "set HF_TOKEN to a token that can read it"
		if h.Token != "" {
			hint = "the HF_TOKEN in use cannot read it; request access on the Hub or use another token"
		}
		return "", fmt.Errorf("tokenizer %s is gated or private (HTTP %d from %s): %s", repoID, resp.StatusCode, h.Endpoint, hint)
	case resp.StatusCode != http.StatusOK:
		return "", fmt.Errorf("download tokenizer %s: %s: HTTP %d from %s", repoID, name, resp.StatusCode, h.Endpoint)
	}
	commit = meta.Get("X-Repo-Commit")
	if commit == "" {
		if commitRE.MatchString(revision) {
			commit = revision
		} else {
			return "", fmt.Errorf("download tokenizer %s: %s did not report the commit (X-Repo-Commit)", repoID, h.Endpoint)
		}
	}
	if !commitRE.MatchString(commit) && strings.ContainsAny(commit, "/\\.") {
		return "", fmt.Errorf("download tokenizer %s: bad commit %q", repoID, commit)
	}
	repo := h.repoDir(repoID)
	blobs := filepath.Join(repo, "blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return "", fmt.Errorf("cache tokenizer %s: %w", repoID, err)
	}
	tmp, err := atomicfile.Create(blobs, "download-*.incomplete", 0)
	if err != nil {
		return "", fmt.Errorf("cache tokenizer %s: %w", repoID, err)
	}
	defer tmp.Abort()
	sum := sha256.New()
	var w io.Writer = io.MultiWriter(tmp, sum)
	if h.Progress != nil {
		w = &progressWriter{w: w, file: name, total: resp.ContentLength, report: h.Progress}
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return "", fmt.Errorf("download tokenizer %s: %s: %w", repoID, name, err)
	}
	etag := normalizeETag(meta.Get("X-Linked-Etag"))
	if etag == "" {
		etag = normalizeETag(meta.Get("ETag"))
	}
	if etag == "" || strings.ContainsAny(etag, "/\\") || etag == "." || etag == ".." {
		etag = hex.EncodeToString(sum.Sum(nil))
	}
	blob := filepath.Join(blobs, etag)
	if err := tmp.Commit(blob); err != nil {
		return "", fmt.Errorf("cache tokenizer %s: %w", repoID, err)
	}
	snap := filepath.Join(repo, "snapshots", commit)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		return "", fmt.Errorf("cache tokenizer %s: %w", repoID, err)
	}
	if err := linkAtomic(filepath.Join("..", "..", "blobs", etag), blob, filepath.Join(snap, name)); err != nil {
		return "", fmt.Errorf("cache tokenizer %s: %w", repoID, err)
	}
	return commit, nil
}

// get fetches u, following redirects by hand: the Hub's metadata (commit,
// etag) is on its own response, while large files redirect to a CDN that
// must not receive the token. meta holds the Hub's headers.
func (h *Hub) get(ctx context.Context, u string) (resp *http.Response, meta http.Header, err error) {
	client := http.DefaultClient
	if h.Client != nil {
		client = h.Client
	}
	noFollow := *client
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	auth := h.Token != ""
	for hops := 0; hops < 10; hops++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, nil, err
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+h.Token)
		}
		req.Header.Set("User-Agent", "tinker-shell (hfhub)")
		resp, err := noFollow.Do(req)
		if err != nil {
			return nil, nil, err
		}
		if meta == nil || meta.Get("X-Repo-Commit") == "" {
			meta = resp.Header.Clone()
		}
		loc := resp.Header.Get("Location")
		if resp.StatusCode < 300 || resp.StatusCode > 399 || loc == "" {
			return resp, meta, nil
		}
		resp.Body.Close()
		next, err := req.URL.Parse(loc)
		if err != nil {
			return nil, nil, fmt.Errorf("bad redirect %q: %w", loc, err)
		}
		// Keep the token only for the Hub itself (e.g. a renamed repo).
		auth = auth && next.Host == req.URL.Host && strings.Contains(next.Path, "/resolve/")
		u = next.String()
	}
	return nil, nil, fmt.Errorf("too many redirects")
}

type progressWriter struct {
	w      io.Writer
	file   string
	done   int64
	total  int64
	report func(string, int64, int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += int64(n)
	p.report(p.file, p.done, p.total)
	return n, err
}

func normalizeETag(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "W/")
	return strings.Trim(s, `"`)
}

// linkAtomic points dst at the blob with a relative symlink (the
// huggingface_hub layout), replacing any old link in one rename; where
// symlinks are unavailable it copies the blob instead.
func linkAtomic(rel, blob, dst string) error {
	err := atomicfile.Symlink(rel, dst)
	var le *os.LinkError
	if err == nil || !errors.As(err, &le) || le.Op != "symlink" {
		return err
	}
	data, err := os.ReadFile(blob) // no symlinks here: a copy
	if err != nil {
		return err
	}
	return writeAtomic(dst, data)
}

func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data)
}
