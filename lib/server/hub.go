package server

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tinkershell/tinker/lib/lazy"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// The Hugging Face Hub's file-resolution endpoints, for the tokenizers of
// the built-in tiny models, so that SDK scripts run offline: with
// HF_ENDPOINT set to this server, huggingface_hub and transformers (the
// SDK's get_tokenizer) download them from here. get_info names these repo
// ids as the models' tokenizer_id. A model directory served under its own
// name (--model NAME=DIR) has its tokenizer files served as repo NAME.
//
//	GET|HEAD /{org}/{name}/resolve/{revision}/{file}   the file; X-Repo-Commit, ETag
//	GET      /api/models/{org}/{name}[/revision/{rev}] {"id", "sha", "siblings"}
//	GET      /api/models/{org}/{name}/tree/{rev}/...   [] (no further files)
//
// A server started with API keys answers only requests bearing one of them
// (Authorization: Bearer KEY, what clients send for HF_TOKEN), with 401
// otherwise. A model directory's files are read only inside its repo root
// (see repoRoot). A missing file of a known repo is a 404 with X-Error-Code EntryNotFound
// (clients treat optional files that way); an unknown repo is RepoNotFound.

type hubRepo struct {
	commit string            // 40 hex digits, derived from the content
	files  map[string][]byte // name -> content
}

var hubRepos = lazy.Value[map[string]*hubRepo]{New: func() map[string]*hubRepo {
	tj := tokenizer.TinyJSON()
	repos := map[string]*hubRepo{}
	for _, a := range models.All() {
		if !models.IsTiny(a.Name) {
			continue
		}
		cfg, _ := json.MarshalIndent(map[string]any{
			"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": a.MaxPositionEmbeddings,
			"bos_token": models.TinySpecials[0], "eos_token": models.TinySpecials[1],
			"pad_token": models.TinySpecials[2], "unk_token": models.TinySpecials[3],
			"clean_up_tokenization_spaces": false,
		}, "", "  ")
		r := &hubRepo{files: map[string][]byte{"tokenizer.json": tj, "tokenizer_config.json": append(cfg, '\n')}}
		r.commit = r.contentCommit()
		repos[strings.ToLower(a.TokenizerID)] = r
	}
	return repos
}}

// hubRepo finds a served repo: a tiny model's tokenizer, or the tokenizer
// files of a model directory served under that name (--model NAME=DIR).
func (s *Server) hubRepo(repoID string) *hubRepo {
	if r := hubRepos.Get()[strings.ToLower(repoID)]; r != nil {
		return r
	}
	if s.opts.Engine == nil {
		return nil
	}
	dir, ok := s.opts.Engine.Dirs[repoID]
	if !ok {
		return nil
	}
	r := &hubRepo{files: map[string][]byte{}}
	root, prefix := repoRoot(dir)
	fsys, err := os.OpenRoot(root)
	if err != nil {
		return nil
	}
	defer fsys.Close()
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"} {
		if b, err := readRegular(fsys, filepath.Join(prefix, name)); err == nil {
			r.files[name] = b
		}
	}
	if r.files["tokenizer.json"] == nil {
		return nil
	}
	r.commit = r.contentCommit()
	return r
}

// repoRoot is the directory a model directory's served files must stay in,
// and dir relative to it. Files are read through an os.Root there, so a
// symlink that leads out of it (tokenizer.json -> /etc/shadow) is refused.
// A Hugging Face cache snapshot (models--org--name/snapshots/REV) keeps its
// files as symlinks into ../../blobs: its root is the models--org--name
// directory.
func repoRoot(dir string) (root, rel string) {
	dir = filepath.Clean(dir)
	snaps := filepath.Dir(dir)
	repo := filepath.Dir(snaps)
	if filepath.Base(snaps) == "snapshots" && strings.HasPrefix(filepath.Base(repo), "models--") {
		return repo, filepath.Join("snapshots", filepath.Base(dir))
	}
	return dir, "."
}

// readRegular reads a regular file under root (never a FIFO or device).
func readRegular(root *os.Root, name string) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	return io.ReadAll(f)
}

// contentCommit is a commit id derived from the files, so it changes
// exactly when they do.
func (r *hubRepo) contentCommit() string {
	h := sha1.New()
	for _, name := range r.names() {
		h.Write([]byte(name))
		h.Write(r.files[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (r *hubRepo) names() []string {
	var ns []string
	for n := range r.files {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// hubPath reports whether path is one of the Hub endpoints above.
func hubPath(path string) bool {
	seg := strings.Split(strings.TrimPrefix(path, "/"), "/")
	return (len(seg) >= 5 && seg[2] == "resolve") || (len(seg) >= 4 && seg[0] == "api" && seg[1] == "models")
}

// hubAuthorized: a server started with API keys serves its Hub files only
// to their holders. Hub clients send HF_TOKEN as a bearer token; the
// X-API-Key header works too. Either is checked as every other request's
// key is (authenticate).
func (s *Server) hubAuthorized(r *http.Request) bool {
	if len(s.keys) == 0 {
		return true
	}
	if key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		r = r.Clone(r.Context())
		r.Header.Set("X-API-Key", key)
	}
	_, e := s.authenticate(r)
	return e == nil
}

func hubError(w http.ResponseWriter, code, msg string) int {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", msg)
	writeJSON(w, http.StatusNotFound, map[string]string{"error": msg})
	return http.StatusNotFound
}

// serveHub answers a Hub request and returns its status.
func (s *Server) serveHub(w http.ResponseWriter, r *http.Request, path string) int {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, errorf(http.StatusMethodNotAllowed, "Method Not Allowed"))
		return http.StatusMethodNotAllowed
	}
	if !s.hubAuthorized(r) {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		w.Header().Set("X-Error-Message", "Invalid or missing token")
		writeError(w, errorf(http.StatusUnauthorized, "This server requires one of its API keys: set HF_TOKEN to your Tinker API key"))
		return http.StatusUnauthorized
	}
	seg := strings.Split(strings.TrimPrefix(path, "/"), "/")
	api := seg[0] == "api"
	if api {
		seg = seg[2:]
	}
	repoID := seg[0] + "/" + seg[1]
	repo := s.hubRepo(repoID)
	if repo == nil {
		return hubError(w, "RepoNotFound", "Repository "+repoID+" is not served here: the local server serves the tokenizers of its tiny models and of --model directories")
	}
	rev := "main"
	switch {
	case api && len(seg) >= 4 && (seg[2] == "revision" || seg[2] == "tree"):
		rev = seg[3]
	case !api:
		rev = seg[3]
	}
	if rev != "main" && rev != repo.commit {
		return hubError(w, "RevisionNotFound", "Revision "+rev+" of "+repoID+" does not exist (main is "+repo.commit+")")
	}
	w.Header().Set("X-Repo-Commit", repo.commit)
	if api {
		if len(seg) >= 3 && seg[2] == "tree" {
			writeRaw(w, http.StatusOK, []byte("[]"))
			return http.StatusOK
		}
		sib := []map[string]string{}
		for _, n := range repo.names() {
			sib = append(sib, map[string]string{"rfilename": n})
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": repoID, "modelId": repoID, "sha": repo.commit, "private": len(s.keys) > 0, "siblings": sib})
		return http.StatusOK
	}
	name := strings.Join(seg[4:], "/")
	body, ok := repo.files[name]
	if !ok {
		return hubError(w, "EntryNotFound", name+" does not exist in "+repoID)
	}
	sum := sha256.Sum256(body)
	h := w.Header()
	h.Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if strings.HasSuffix(name, ".json") {
		h.Set("Content-Type", "application/json")
	} else {
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(body)
	}
	return http.StatusOK
}
