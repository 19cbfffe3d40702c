package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// The sequence huggingface_hub's hf_hub_download performs for one file
// (file_download.py, as of hub 0.2x-0.3x), replayed here because neither
// transformers nor huggingface_hub can be installed on this machine:
//
//  1. HEAD {endpoint}/{repo}/resolve/{rev}/{file} with its user-agent,
//     Accept-Encoding: identity and (when a token is set) Authorization,
//     redirects not followed except relative ones (renamed repos).
//  2. A 404 is classified by X-Error-Code: EntryNotFound (a missing
//     optional file: transformers goes on; the commit from X-Repo-Commit
//     names a .no_exist marker), RevisionNotFound, RepoNotFound.
//  3. Otherwise X-Repo-Commit (else "Distant resource does not seem to be on
//     huggingface.co") and X-Linked-Etag or ETag (else "does not have an
//     ETag"), W/ and quotes stripped, and X-Linked-Size or Content-Length.
//  4. refs/{rev} gets the commit; snapshots/{commit}/{file} links to
//     blobs/{etag}; an existing blob or pointer means no GET.
//  5. Otherwise GET the same URL (or an absolute Location) and check the
//     size ("Consistency check failed").

type hfFetcher struct {
	endpoint, cache string
	client          *http.Client
}

var errEntryNotFound = errors.New("EntryNotFoundError")

const hfUserAgent = "unknown/None; hf_hub/0.35.3; python/3.13.5; torch/2.7.1; transformers/4.56.2"

func (f *hfFetcher) request(method, u string) (*http.Response, error) {
	for range 5 {
		req, _ := http.NewRequest(method, u, nil)
		req.Header.Set("User-Agent", hfUserAgent)
		req.Header.Set("Accept-Encoding", "identity")
		req.Header.Set("Authorization", "Bearer hf_notarealtoken") // HF_TOKEN may be set; the server must not mind
		resp, err := f.client.Do(req)
		if err != nil {
			return nil, err
		}
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode < 300 || resp.StatusCode >= 400 || loc == nil || loc.Host != "" {
			return resp, nil
		}
		resp.Body.Close()
		base, _ := url.Parse(u)
		u = base.ResolveReference(loc).String() // only relative redirects are followed
	}
	return nil, errors.New("too many redirects")
}

// download is hf_hub_download: it returns the snapshot path of the file.
func (f *hfFetcher) download(repo, rev, file string) (string, error) {
	u := fmt.Sprintf("%s/%s/resolve/%s/%s", f.endpoint, repo, rev, file)
	repoDir := filepath.Join(f.cache, "models--"+strings.ReplaceAll(repo, "/", "--"))
	head, err := f.request(http.MethodHead, u)
	if err != nil {
		return "", err
	}
	head.Body.Close()
	commit := head.Header.Get("X-Repo-Commit")
	if head.StatusCode == 404 {
		code := head.Header.Get("X-Error-Code")
		if code == "EntryNotFound" && commit != "" {
			os.MkdirAll(filepath.Join(repoDir, ".no_exist", commit), 0o755)
			os.WriteFile(filepath.Join(repoDir, ".no_exist", commit, file), nil, 0o644)
			return "", errEntryNotFound
		}
		return "", fmt.Errorf("%s: 404 %s", file, code)
	}
	if head.StatusCode != 200 {
		return "", fmt.Errorf("HEAD %s: %d", file, head.StatusCode)
	}
	etag := head.Header.Get("X-Linked-Etag")
	if etag == "" {
		etag = head.Header.Get("ETag")
	}
	etag = strings.Trim(strings.TrimPrefix(etag, "W/"), `"`)
	size, serr := strconv.Atoi(head.Header.Get("Content-Length"))
	if l := head.Header.Get("X-Linked-Size"); l != "" {
		size, serr = strconv.Atoi(l)
	}
	switch {
	case commit == "":
		return "", errors.New("Distant resource does not seem to be on huggingface.co")
	case etag == "":
		return "", errors.New("Distant resource does not have an ETag")
	case serr != nil:
		return "", fmt.Errorf("no size: %v", serr)
	}
	if rev != commit {
		os.MkdirAll(filepath.Join(repoDir, "refs"), 0o755)
		os.WriteFile(filepath.Join(repoDir, "refs", rev), []byte(commit), 0o644)
	}
	pointer, blob := filepath.Join(repoDir, "snapshots", commit, file), filepath.Join(repoDir, "blobs", etag)
	if _, err := os.Stat(pointer); err == nil {
		return pointer, nil
	}
	if _, err := os.Stat(blob); err != nil {
		get, err := f.request(http.MethodGet, u)
		if err != nil {
			return "", err
		}
		body, _ := io.ReadAll(get.Body)
		get.Body.Close()
		if get.StatusCode != 200 || len(body) != size {
			return "", fmt.Errorf("Consistency check failed: file should be of size %d but has size %d (GET %d)", size, len(body), get.StatusCode)
		}
		os.MkdirAll(filepath.Dir(blob), 0o755)
		os.WriteFile(blob, body, 0o644)
	}
	os.MkdirAll(filepath.Dir(pointer), 0o755)
	return pointer, os.Symlink(filepath.Join("..", "..", "blobs", etag), pointer)
}

// transformersTokenizerFiles are the files AutoTokenizer.from_pretrained
// asks for, in order, for a fast tokenizer whose tokenizer_config.json
// names its class (so config.json is not needed, but asked for by
// pipelines; a 404 for it must be EntryNotFound).
var transformersTokenizerFiles = []string{"tokenizer_config.json", "tokenizer.json", "added_tokens.json",
	"special_tokens_map.json", "chat_template.jinja", "config.json"}

// TestHubHTTPSequenceOfHuggingFaceHub (issue 22, item 6): the files
// transformers' AutoTokenizer asks huggingface_hub for, fetched with
// huggingface_hub's HTTP sequence against the server: present files carry
// X-Repo-Commit, an ETag that names the content and a size the GET
// matches; absent ones are EntryNotFound with the commit (so the hub
// client records .no_exist and transformers carries on); nothing
// redirects; a second run only HEADs. The snapshot then loads and
// encodes like the built-in tokenizer.
func TestHubHTTPSequenceOfHuggingFaceHub(t *testing.T) {
	e := newEnv(t, "", Options{})
	var mu sync.Mutex
	var log []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		log = append(log, r.Method+" "+r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:])
		mu.Unlock()
		e.srv.Handler().ServeHTTP(w, r)
	}))
	defer hs.Close()
	arch, _ := models.Lookup(models.TinyLlama)
	repo := arch.TokenizerID
	f := &hfFetcher{endpoint: hs.URL, cache: t.TempDir(),
		client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	fetchAll := func() (snap string) {
		for _, file := range transformersTokenizerFiles {
			p, err := f.download(repo, "main", file)
			switch {
			case file == "tokenizer_config.json" || file == "tokenizer.json":
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				snap = filepath.Dir(p)
			case !errors.Is(err, errEntryNotFound):
				t.Errorf("%s: %v, want EntryNotFound with the commit", file, err)
			}
		}
		return snap
	}
	snap := fetchAll()
	var wantLog []string
	for _, file := range transformersTokenizerFiles {
		wantLog = append(wantLog, "HEAD "+file)
		if file == "tokenizer_config.json" || file == "tokenizer.json" {
			wantLog = append(wantLog, "GET "+file)
		}
	}
	if !slices.Equal(log, wantLog) {
		t.Errorf("requests %q, want %q", log, wantLog)
	}
	commit := filepath.Base(snap)
	repoDir := filepath.Dir(filepath.Dir(snap))
	if ref, _ := os.ReadFile(filepath.Join(repoDir, "refs", "main")); string(ref) != commit {
		t.Errorf("refs/main %q, snapshot %s", ref, commit)
	}
	if _, err := os.Stat(filepath.Join(repoDir, ".no_exist", commit, "config.json")); err != nil {
		t.Errorf("no .no_exist marker for config.json: %v", err)
	}
	body, _ := os.ReadFile(filepath.Join(snap, "tokenizer.json"))
	sum := sha256.Sum256(body)
	if _, err := os.Stat(filepath.Join(repoDir, "blobs", hex.EncodeToString(sum[:]))); err != nil || !bytes.Equal(body, tokenizer.TinyJSON()) {
		t.Errorf("blob not named by the ETag or content differs: %v", err)
	}
	// The model API agrees on the commit (snapshot_download reads it there).
	resp, err := http.Get(hs.URL + "/api/models/" + repo + "/revision/main")
	if err != nil {
		t.Fatal(err)
	}
	var info struct{ Sha string }
	json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if info.Sha != commit {
		t.Errorf("api/models sha %q, X-Repo-Commit %q", info.Sha, commit)
	}
	// transformers (4.5x) lists extra chat templates through the tree API;
	// an empty listing is what a repo without them gives.
	resp, err = http.Get(hs.URL + "/api/models/" + repo + "/tree/main/additional_chat_templates?recursive=False&expand=False")
	if err != nil {
		t.Fatal(err)
	}
	tree, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(tree)) != "[]" {
		t.Errorf("tree listing = %d %s", resp.StatusCode, tree)
	}
	// Cached: a second AutoTokenizer only checks with HEAD.
	log = nil
	fetchAll()
	for _, l := range log {
		if !strings.HasPrefix(l, "HEAD ") {
			t.Errorf("second run sent %s", l)
		}
	}
	// Pinned to the commit, the same files resolve; refs are not rewritten.
	if _, err := f.download(repo, commit, "tokenizer.json"); err != nil {
		t.Errorf("download at the commit: %v", err)
	}
	tok, err := tokenizer.Load(snap)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := tokenizer.Tiny()
	if a, b := tok.Encode("Hi there", false), want.Encode("Hi there", false); !slices.Equal(a, b) {
		t.Errorf("downloaded tokenizer encodes %v, built-in %v", a, b)
	}
}
