// Package hubtest is a loopback Hugging Face Hub for tests: it speaks the
// endpoints a push uses the way the Hub does, so lib/hfhub's tests and the
// golden cases exercise the real client against it.
package hubtest

import (
	"bufio"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
)

// Server is a loopback Hub speaking the endpoints a push uses, with the
// Hub's status codes and error shapes: JSON {"error": …} bodies, 401 for a
// bad token, 409 for an existing repo or branch, 404 with X-Error-Code for
// missing repos, revisions and files, and the Git LFS batch protocol with
// uploads going to a separate "storage" path that must not get the token.
type Server struct {
	srv   *httptest.Server
	token string
	user  string

	mu        sync.Mutex
	repos     map[string]*hubRepo // "ns/name"
	objects   map[string][]byte   // LFS storage by sha256
	failPuts  int                 // storage PUTs to cut off mid-body
	puts      int
	commits   []Commit
	echoToken bool // error bodies quote the Authorization header, as a careless proxy might
}

type hubRepo struct {
	private  bool
	branches map[string]map[string][]byte // branch → path → content
}

// Commit is one commit the server accepted.
type Commit struct {
	Repo, Branch, Summary string
	Files                 []string
}

// User is the account the server's token belongs to.
const User = "alice"

// New starts a server accepting token, User's; Close stops it.
func New(token string) *Server { return NewAs(token, User) }

// NewAs starts a server accepting token as the account user.
func NewAs(token, user string) *Server {
	h := &Server{token: token, user: user, repos: map[string]*hubRepo{}, objects: map[string][]byte{}}
	h.srv = httptest.NewServer(h)
	return h
}

// URL is the server's endpoint, for HF_ENDPOINT.
func (h *Server) URL() string { return h.srv.URL }

// Client is an HTTP client for the server.
func (h *Server) Client() *http.Client { return h.srv.Client() }

// Close stops the server.
func (h *Server) Close() { h.srv.Close() }

// AddRepo creates a repo holding files on main, as if pushed earlier.
func (h *Server) AddRepo(id string, files map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[id] = newHubRepo(files)
}

// newHubRepo holds the first commit the Hub makes in a new repo.
func newHubRepo(files map[string]string) *hubRepo {
	main := map[string][]byte{".gitattributes": []byte("*.safetensors filter=lfs diff=lfs merge=lfs -text\n")}
	for p, c := range files {
		main[p] = []byte(c)
	}
	return &hubRepo{private: true, branches: map[string]map[string][]byte{"main": main}}
}

func hubErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func gitBlobID(data []byte) string {
	s := sha1.New()
	fmt.Fprintf(s, "blob %d\x00", len(data))
	s.Write(data)
	return hex.EncodeToString(s.Sum(nil))
}

func sha256Hex(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func isLFSPath(p string) bool {
	return strings.HasSuffix(p, ".safetensors") || strings.HasSuffix(p, ".bin")
}

func (h *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if strings.HasPrefix(path, "/storage/") {
		h.storagePut(w, r, strings.TrimPrefix(path, "/storage/"))
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+h.token {
		msg := "Invalid credentials in Authorization header"
		if h.echoToken {
			msg += ": got " + r.Header.Get("Authorization")
		}
		hubErr(w, http.StatusUnauthorized, "", msg)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case path == "/api/whoami-v2" && r.Method == http.MethodGet:
		writeJSON(w, map[string]any{"type": "user", "name": h.user, "orgs": []any{}})
	case path == "/api/repos/create" && r.Method == http.MethodPost:
		h.createRepo(w, r)
	case strings.HasPrefix(path, "/api/models/") && r.Method == http.MethodPost:
		parts := strings.Split(strings.TrimPrefix(path, "/api/models/"), "/")
		if len(parts) != 4 {
			hubErr(w, http.StatusNotFound, "", "Not Found")
			return
		}
		repoID, verb, rev := parts[0]+"/"+parts[1], parts[2], parts[3]
		repo := h.repos[repoID]
		if repo == nil {
			hubErr(w, http.StatusNotFound, "RepoNotFound", "Repository not found")
			return
		}
		switch verb {
		case "branch":
			if repo.branches[rev] != nil {
				hubErr(w, http.StatusConflict, "", "Reference already exists")
				return
			}
			copied := map[string][]byte{}
			for p, c := range repo.branches["main"] {
				copied[p] = c
			}
			repo.branches[rev] = copied
			writeJSON(w, map[string]any{})
		case "preupload":
			h.preupload(w, r, repo, rev)
		case "commit":
			h.commit(w, r, repoID, repo, rev)
		default:
			hubErr(w, http.StatusNotFound, "", "Not Found")
		}
	case strings.HasSuffix(path, ".git/info/lfs/objects/batch"):
		h.batch(w, r)
	case strings.HasSuffix(path, ".git/info/lfs/objects/verify"):
		var obj lfsObject
		json.NewDecoder(r.Body).Decode(&obj)
		if data, ok := h.objects[obj.OID]; !ok || int64(len(data)) != obj.Size {
			hubErr(w, http.StatusNotFound, "", "object not found")
			return
		}
		writeJSON(w, map[string]any{})
	case strings.Contains(path, "/resolve/") && r.Method == http.MethodGet:
		h.resolve(w, path)
	default:
		hubErr(w, http.StatusNotFound, "", "Not Found")
	}
}

func (h *Server) createRepo(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name         string `json:"name"`
		Organization string `json:"organization"`
		Private      bool   `json:"private"`
		Type         string `json:"type"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Name == "" || in.Type != "model" {
		hubErr(w, http.StatusBadRequest, "", "bad create payload")
		return
	}
	if in.Organization != h.user {
		hubErr(w, http.StatusForbidden, "", "You don't have the rights to create a model under the namespace \""+in.Organization+"\"")
		return
	}
	id := in.Organization + "/" + in.Name
	if h.repos[id] != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		json.NewEncoder(w).Encode(map[string]string{"error": "You already created this model repo", "url": h.srv.URL + "/" + id})
		return
	}
	h.repos[id] = newHubRepo(nil)
	h.repos[id].private = in.Private
	writeJSON(w, map[string]string{"url": h.srv.URL + "/" + id, "name": id})
}

func (h *Server) resolve(w http.ResponseWriter, path string) {
	before, after, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/resolve/")
	rev, file, _ := strings.Cut(after, "/")
	repo := h.repos[before]
	switch {
	case repo == nil:
		hubErr(w, http.StatusNotFound, "RepoNotFound", "Repository not found")
	case repo.branches[rev] == nil:
		hubErr(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
	case repo.branches[rev][file] == nil:
		hubErr(w, http.StatusNotFound, "EntryNotFound", "Entry not found")
	default:
		w.Write(repo.branches[rev][file])
	}
}

func (h *Server) preupload(w http.ResponseWriter, r *http.Request, repo *hubRepo, rev string) {
	files := repo.branches[rev]
	if files == nil {
		hubErr(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	var in struct {
		Files []struct {
			Path   string `json:"path"`
			Sample string `json:"sample"`
			Size   int64  `json:"size"`
		} `json:"files"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		hubErr(w, http.StatusBadRequest, "", err.Error())
		return
	}
	var out []map[string]any
	for _, f := range in.Files {
		if sample, err := base64.StdEncoding.DecodeString(f.Sample); err != nil || len(sample) > 512 || int64(len(sample)) > f.Size {
			hubErr(w, http.StatusBadRequest, "", "bad sample for "+f.Path)
			return
		}
		mode := "regular"
		if isLFSPath(f.Path) {
			mode = "lfs"
		}
		entry := map[string]any{"path": f.Path, "uploadMode": mode, "shouldIgnore": false}
		if old, ok := files[f.Path]; ok {
			if mode == "lfs" {
				entry["oid"] = sha256Hex(old)
			} else {
				entry["oid"] = gitBlobID(old)
			}
		}
		out = append(out, entry)
	}
	writeJSON(w, map[string]any{"files": out, "commitOid": strings.Repeat("a", 40)})
}

func (h *Server) batch(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Accept") != lfsMediaType {
		hubErr(w, http.StatusNotAcceptable, "", "want "+lfsMediaType)
		return
	}
	var in struct {
		Operation string      `json:"operation"`
		Transfers []string    `json:"transfers"`
		Objects   []lfsObject `json:"objects"`
		HashAlgo  string      `json:"hash_algo"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Operation != "upload" || in.HashAlgo != "sha256" {
		hubErr(w, http.StatusUnprocessableEntity, "", "bad batch request")
		return
	}
	repoPath := strings.TrimSuffix(r.URL.Path, "/info/lfs/objects/batch")
	var objs []map[string]any
	for _, o := range in.Objects {
		obj := map[string]any{"oid": o.OID, "size": o.Size, "authenticated": true}
		if _, stored := h.objects[o.OID]; !stored {
			obj["actions"] = map[string]any{
				"upload": map[string]any{"href": h.srv.URL + "/storage/" + o.OID, "header": map[string]string{"X-Amz-Signature": "sig-" + o.OID[:8]}},
				"verify": map[string]any{"href": h.srv.URL + repoPath + "/info/lfs/objects/verify"},
			}
		}
		objs = append(objs, obj)
	}
	w.Header().Set("Content-Type", lfsMediaType)
	json.NewEncoder(w).Encode(map[string]any{"transfer": "basic", "objects": objs})
}

// storagePut stores an object; with failPuts it reads part of the body and
// then drops the connection, as a reset mid-upload does.
func (h *Server) storagePut(w http.ResponseWriter, r *http.Request, oid string) {
	if r.Method != http.MethodPut {
		http.Error(w, "method", http.StatusMethodNotAllowed)
		return
	}
	if r.Header.Get("Authorization") != "" {
		http.Error(w, "<Error><Code>InvalidArgument</Code><Message>token sent to storage</Message></Error>", http.StatusBadRequest)
		return
	}
	if r.Header.Get("X-Amz-Signature") != "sig-"+oid[:8] {
		http.Error(w, "<Error><Code>AccessDenied</Code></Error>", http.StatusForbidden)
		return
	}
	h.mu.Lock()
	h.puts++
	fail := h.failPuts > 0
	if fail {
		h.failPuts--
	}
	h.mu.Unlock()
	if fail {
		io.CopyN(io.Discard, r.Body, r.ContentLength/2)
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	data, err := io.ReadAll(r.Body)
	if err != nil || sha256Hex(data) != oid || int64(len(data)) != r.ContentLength {
		http.Error(w, "<Error><Code>BadDigest</Code></Error>", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.objects[oid] = data
	h.mu.Unlock()
	w.Header().Set("ETag", `"`+oid[:16]+`"`)
}

func (h *Server) commit(w http.ResponseWriter, r *http.Request, repoID string, repo *hubRepo, rev string) {
	files := repo.branches[rev]
	if files == nil {
		hubErr(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	if r.Header.Get("Content-Type") != "application/x-ndjson" {
		hubErr(w, http.StatusBadRequest, "", "want application/x-ndjson")
		return
	}
	if h.echoToken {
		hubErr(w, http.StatusBadRequest, "", "commit refused for "+r.Header.Get("Authorization"))
		return
	}
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(nil, 64<<20)
	c := Commit{Repo: repoID, Branch: rev}
	changes := map[string][]byte{}
	for n := 0; sc.Scan(); n++ {
		var line struct {
			Key   string `json:"key"`
			Value struct {
				Summary  string `json:"summary"`
				Path     string `json:"path"`
				Encoding string `json:"encoding"`
				Content  string `json:"content"`
				Algo     string `json:"algo"`
				OID      string `json:"oid"`
				Size     int64  `json:"size"`
			} `json:"value"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			hubErr(w, http.StatusBadRequest, "", "bad ndjson line "+strconv.Itoa(n))
			return
		}
		if (n == 0) != (line.Key == "header") {
			hubErr(w, http.StatusBadRequest, "", "the header must come first, once")
			return
		}
		v := line.Value
		switch line.Key {
		case "header":
			c.Summary = v.Summary
		case "file":
			data, err := base64.StdEncoding.DecodeString(v.Content)
			if err != nil || v.Encoding != "base64" {
				hubErr(w, http.StatusBadRequest, "", "bad file "+v.Path)
				return
			}
			changes[v.Path] = data
		case "lfsFile":
			data, ok := h.objects[v.OID]
			if !ok || v.Algo != "sha256" || int64(len(data)) != v.Size {
				hubErr(w, http.StatusBadRequest, "", "LFS object "+v.OID+" was not uploaded")
				return
			}
			changes[v.Path] = data
		default:
			hubErr(w, http.StatusBadRequest, "", "unknown key "+line.Key)
			return
		}
		if line.Key != "header" {
			c.Files = append(c.Files, v.Path)
		}
	}
	if c.Summary == "" || len(c.Files) == 0 {
		hubErr(w, http.StatusBadRequest, "", "empty commit")
		return
	}
	for p, d := range changes {
		files[p] = d
	}
	h.commits = append(h.commits, c)
	oid := strings.Repeat(strconv.Itoa(len(h.commits)%10), 40)
	writeJSON(w, map[string]any{"success": true, "commitOid": oid, "commitUrl": h.srv.URL + "/" + repoID + "/commit/" + oid, "pullRequestUrl": nil})
}

// lfsMediaType is the Git LFS batch API's content type.
const lfsMediaType = "application/vnd.git-lfs+json"

type lfsObject struct {
	OID  string `json:"oid"`
	Size int64  `json:"size"`
}

// Files returns a copy of a branch's files, nil if the repo or branch is missing.
func (h *Server) Files(repo, branch string) map[string][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[repo]
	if r == nil || r.branches[branch] == nil {
		return nil
	}
	out := map[string][]byte{}
	for p, c := range r.branches[branch] {
		out[p] = c
	}
	return out
}

// Private reports a repo's visibility and whether it exists.
func (h *Server) Private(repo string) (private, exists bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[repo]
	return r != nil && r.private, r != nil
}

// RepoCount is the number of repos.
func (h *Server) RepoCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.repos)
}

// Commits returns the commits made so far.
func (h *Server) Commits() []Commit {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Commit(nil), h.commits...)
}

// Puts is the number of storage uploads attempted.
func (h *Server) Puts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.puts
}

// HasObject reports whether LFS storage holds data.
func (h *Server) HasObject(data []byte) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.objects[sha256Hex(data)] != nil
}

// FailPuts makes the next n storage uploads drop the connection halfway.
func (h *Server) FailPuts(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failPuts = n
}

// EchoToken makes error answers quote the Authorization header, as a
// careless proxy might, to test that clients redact it.
func (h *Server) EchoToken(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.echoToken = on
}
