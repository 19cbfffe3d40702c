package hfhub

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// AdapterInfo is what the Tinker service knows about a checkpoint's
// training; nil fields are unknown.
type AdapterInfo struct {
	BaseModel    string // "" or "unknown" when unknown
	LoraRank     *int
	TrainAttn    *bool
	TrainMLP     *bool
	TrainUnembed *bool
}

// PushOptions describe one upload of an extracted checkpoint.
type PushOptions struct {
	Dir        string // the extracted checkpoint: adapter_config.json, adapter_model.safetensors, …
	TinkerPath string // tinker://<run>/<kind>/<name> it came from
	Adapter    AdapterInfo

	// RepoID is "name" or "namespace/name"; "" derives it from the base
	// model and run id (DefaultRepoID) and then, if Revision is "" too,
	// the revision from the checkpoint id (DefaultRevision). A name
	// without a namespace goes under the token's account.
	RepoID        string
	Revision      string // branch to commit to; created if missing; "" is the default branch
	Public        bool   // visibility of a repo this push creates
	CommitMessage string // "" gives one naming the checkpoint
	CreatePR      bool   // open a pull request against the default branch instead
	// AllowPatterns, if any, select the files to upload; IgnorePatterns
	// drop some (shell patterns on slash-separated paths; '*' spans '/').
	// Without AllowPatterns, checkpoint_complete is never uploaded.
	AllowPatterns  []string
	IgnorePatterns []string
	NoModelCard    bool // do not write README.md when the checkpoint has none
	// Force pushes even when the repo's README names another checkpoint.
	Force bool
	// User is the account name when the caller already asked Whoami.
	User string
	// Progress, if set, gets the bytes sent so far and the bytes to send.
	Progress func(sent, total int64)
}

// PushResult says where the checkpoint went.
type PushResult struct {
	RepoID         string // as given or derived, possibly without namespace
	FullRepoID     string // namespace/name
	Revision       string // the branch committed to ("" for the default one)
	RepoURL        string
	CommitURL      string // "" when nothing changed
	CommitOID      string
	PullRequestURL string   // with CreatePR
	Uploaded       []string // files in the commit
	Unchanged      []string // files the repo already had, identical
}

// Errors about the checkpoint folder, before anything is sent.
var (
	ErrNotAdapter = errors.New("checkpoint is not a PEFT adapter: expected adapter_config.json and adapter_model.safetensors (or adapter_model.bin)")
	ErrIncomplete = errors.New("checkpoint is missing checkpoint_complete: the adapter files may be incomplete")
)

// CheckAdapterDir reports whether dir holds a complete PEFT adapter.
func CheckAdapterDir(dir string) error {
	exists := func(name string) bool {
		fi, err := os.Stat(filepath.Join(dir, name))
		return err == nil && fi.Mode().IsRegular()
	}
	if !exists("adapter_config.json") || !(exists("adapter_model.safetensors") || exists("adapter_model.bin")) {
		return ErrNotAdapter
	}
	if !exists("checkpoint_complete") {
		return ErrIncomplete
	}
	return nil
}

// Push uploads an extracted checkpoint to a model repo on the Hub, the way
// huggingface_hub's upload_folder does: create the repo (an existing one is
// fine), refuse one whose README names another tinker:// checkpoint, ask
// the Hub which files go to LFS, upload those, then commit everything in
// one commit. It writes into opts.Dir: adapter_config.json gains the base
// model when it lacks one, and README.md is added unless NoModelCard.
// Errors never contain the token.
func (h *Hub) Push(ctx context.Context, opts PushOptions) (*PushResult, error) {
	res, err := h.push(ctx, opts)
	return res, h.scrub(err)
}

func (h *Hub) push(ctx context.Context, o PushOptions) (*PushResult, error) {
	runID, checkpointID, ok := splitTinkerPath(o.TinkerPath)
	if !ok {
		return nil, fmt.Errorf("invalid tinker path %q (want tinker://<run>/<kind>/<name>)", o.TinkerPath)
	}
	if err := CheckAdapterDir(o.Dir); err != nil {
		return nil, err
	}
	if h.Token == "" {
		return nil, ErrNotLoggedIn
	}
	if o.CreatePR && o.Revision != "" {
		return nil, errors.New("a pull request always targets the default branch: drop the revision or the pull request")
	}
	base := o.Adapter.BaseModel
	if base == "" {
		base = "unknown"
	}
	res := &PushResult{RepoID: o.RepoID, Revision: o.Revision}
	if res.RepoID == "" {
		res.RepoID = DefaultRepoID(base, runID)
		if res.Revision == "" && !o.CreatePR {
			res.Revision = DefaultRevision(checkpointID)
		}
	}
	res.FullRepoID = res.RepoID
	if !strings.Contains(res.RepoID, "/") {
		user := o.User
		if user == "" {
			u, err := h.Whoami(ctx)
			if err != nil {
				return nil, err
			}
			user = u.Name
		}
		res.FullRepoID = user + "/" + res.RepoID
	}
	if !validRepoID(res.FullRepoID) {
		return nil, fmt.Errorf("invalid Hugging Face repo id %q (want namespace/name)", res.FullRepoID)
	}
	_ = fillBaseModel(o.Dir, base) // best effort: the adapter loads without it, given the base model
	readme := filepath.Join(o.Dir, "README.md")
	if _, err := os.Stat(readme); !o.NoModelCard && errors.Is(err, os.ErrNotExist) {
		card := ModelCard(res.FullRepoID, o.TinkerPath, o.Adapter)
		if err := os.WriteFile(readme, []byte(card), 0o644); err != nil {
			return nil, fmt.Errorf("write model card: %w", err)
		}
	}
	ignore := o.IgnorePatterns
	if len(o.AllowPatterns) == 0 {
		ignore = append(append([]string{}, ignore...), "checkpoint_complete")
	}
	files, err := selectFiles(o.Dir, o.AllowPatterns, ignore)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", o.Dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no files in %s match the upload patterns", o.Dir)
	}

	if res.RepoURL, err = h.CreateRepo(ctx, res.FullRepoID, !o.Public); err != nil {
		return nil, err
	}
	rev := res.Revision
	if rev == "" {
		rev = "main"
	}
	if err := h.checkSameCheckpoint(ctx, res.FullRepoID, rev, o.TinkerPath, o.Force); err != nil {
		return nil, err
	}
	if rev != "main" && !strings.HasPrefix(rev, "refs/") {
		if err := h.createBranch(ctx, res.FullRepoID, rev); err != nil {
			return nil, err
		}
	}
	msg := o.CommitMessage
	if msg == "" {
		msg = "Upload Tinker checkpoint " + o.TinkerPath
	}
	c := &commitPlan{hub: h, repoID: res.FullRepoID, revision: rev, createPR: o.CreatePR, dir: o.Dir}
	if err := c.prepare(ctx, files); err != nil {
		return nil, err
	}
	for _, f := range c.files {
		if f.unchanged {
			res.Unchanged = append(res.Unchanged, f.path)
		} else if !f.ignored {
			res.Uploaded = append(res.Uploaded, f.path)
		}
	}
	if len(res.Uploaded) == 0 {
		return res, nil // the repo has these files already; an empty commit is refused
	}
	prog := &progress{report: o.Progress}
	if err := c.uploadLFS(ctx, prog); err != nil {
		return nil, err
	}
	if err := c.send(ctx, msg, prog, res); err != nil {
		return nil, err
	}
	return res, nil
}

// checkSameCheckpoint refuses a repo whose README at rev names a tinker://
// path other than want, so one checkpoint does not overwrite another.
func (h *Hub) checkSameCheckpoint(ctx context.Context, repoID, rev, want string, force bool) error {
	data, found, err := h.readFile(ctx, repoID, rev, "README.md")
	if err != nil || !found {
		return err
	}
	if got := FindTinkerPath(string(data)); got != "" && got != want && !force {
		return &CheckpointMismatchError{RepoID: repoID, Found: got, Expected: want}
	}
	return nil
}

// commitPlan gathers the files of one commit and how each travels.
type commitPlan struct {
	hub      *Hub
	repoID   string
	revision string
	createPR bool
	dir      string
	files    []*commitFile
}

type commitFile struct {
	path      string // in the repo, slash-separated
	local     string
	size      int64
	lfs       bool   // uploaded to storage first, committed by its sha256
	sha256    string // hex, for LFS files
	ignored   bool   // the repo's .gitignore excludes it
	unchanged bool   // the repo has the same content at this path
}

func (c *commitPlan) query() string {
	if c.createPR {
		return "?create_pr=1"
	}
	return ""
}

// prepare asks the Hub (preupload) which files go to LFS, which its
// .gitignore drops, and which it already has unchanged.
func (c *commitPlan) prepare(ctx context.Context, paths []string) error {
	type entry struct {
		Path   string `json:"path"`
		Sample string `json:"sample"` // base64 of the first 512 bytes
		Size   int64  `json:"size"`
	}
	var req struct {
		Files []entry `json:"files"`
	}
	byPath := map[string]*commitFile{}
	for _, p := range paths {
		f := &commitFile{path: p, local: filepath.Join(c.dir, filepath.FromSlash(p))}
		fh, err := os.Open(f.local)
		if err != nil {
			return err
		}
		sample := make([]byte, 512)
		n, err := io.ReadFull(fh, sample)
		fi, serr := fh.Stat()
		fh.Close()
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return fmt.Errorf("read %s: %w", f.local, err)
		}
		if serr != nil {
			return serr
		}
		f.size = fi.Size()
		c.files = append(c.files, f)
		byPath[p] = f
		req.Files = append(req.Files, entry{Path: p, Sample: base64.StdEncoding.EncodeToString(sample[:n]), Size: f.size})
	}
	var out struct {
		Files []struct {
			Path         string `json:"path"`
			UploadMode   string `json:"uploadMode"`
			ShouldIgnore bool   `json:"shouldIgnore"`
			OID          string `json:"oid"`
		} `json:"files"`
	}
	u := fmt.Sprintf("%s/api/models/%s/preupload/%s%s", c.hub.Endpoint, c.repoID, url.PathEscape(c.revision), c.query())
	err := c.hub.retry(ctx, func() error {
		_, err := c.hub.callJSON(ctx, "preupload to "+c.repoID, http.MethodPost, u, req, &out)
		return err
	})
	if err != nil {
		return err
	}
	seen := 0
	for _, r := range out.Files {
		f := byPath[r.Path]
		if f == nil {
			continue
		}
		seen++
		switch r.UploadMode {
		case "lfs":
			f.lfs = f.size > 0 // storage refuses empty objects; git takes them
		case "regular":
		default:
			return fmt.Errorf("hub: preupload to %s: unknown upload mode %q for %s", c.repoID, r.UploadMode, r.Path)
		}
		f.ignored = r.ShouldIgnore
		if r.OID != "" {
			local, err := f.oid()
			if err != nil {
				return err
			}
			f.unchanged = local == r.OID
		}
	}
	if seen != len(c.files) {
		return fmt.Errorf("hub: preupload to %s: the answer covers %d of %d files", c.repoID, seen, len(c.files))
	}
	return nil
}

// oid is how the Hub identifies content in preupload answers: the sha256
// for LFS files, the git blob id for the others.
func (f *commitFile) oid() (string, error) {
	if f.lfs {
		if f.sha256 == "" {
			fh, err := os.Open(f.local)
			if err != nil {
				return "", err
			}
			defer fh.Close()
			sum := sha256.New()
			if _, err := io.Copy(sum, fh); err != nil {
				return "", fmt.Errorf("hash %s: %w", f.local, err)
			}
			f.sha256 = hex.EncodeToString(sum.Sum(nil))
		}
		return f.sha256, nil
	}
	data, err := os.ReadFile(f.local)
	if err != nil {
		return "", err
	}
	sum := sha1.New()
	sum.Write([]byte("blob " + strconv.Itoa(len(data)) + "\x00"))
	sum.Write(data)
	return hex.EncodeToString(sum.Sum(nil)), nil
}

func (f *commitFile) inCommit() bool { return !f.ignored && !f.unchanged }

// uploadLFS sends the LFS files the Hub does not have yet.
func (c *commitPlan) uploadLFS(ctx context.Context, prog *progress) error {
	var objs []lfsObject
	local := map[string]*commitFile{}
	for _, f := range c.files {
		if !f.inCommit() {
			continue
		}
		prog.total += f.size
		if !f.lfs {
			continue
		}
		if _, err := f.oid(); err != nil {
			return err
		}
		if local[f.sha256] == nil {
			objs = append(objs, lfsObject{OID: f.sha256, Size: f.size})
			local[f.sha256] = f
		}
	}
	if len(objs) == 0 {
		return nil
	}
	answers, err := c.hub.lfsBatch(ctx, c.repoID, c.revision, objs)
	if err != nil {
		return err
	}
	for _, a := range answers {
		f := local[a.OID]
		if f == nil || a.Size != f.size {
			return fmt.Errorf("hub: LFS batch for %s: unexpected object %s (%d bytes)", c.repoID, a.OID, a.Size)
		}
		if a.Actions.Upload == nil { // stored already
			prog.add(f.size)
			continue
		}
		if err := c.hub.lfsUpload(ctx, f.local, a, prog); err != nil {
			return err
		}
	}
	return nil
}

// send posts the commit as NDJSON: a header line, then one line per file,
// regular files inline in base64 and LFS files by sha256 and size.
func (c *commitPlan) send(ctx context.Context, message string, prog *progress, res *PushResult) error {
	var body bytes.Buffer
	enc := json.NewEncoder(&body) // one value per line
	line := func(key string, value any) error { return enc.Encode(map[string]any{"key": key, "value": value}) }
	if err := line("header", map[string]string{"summary": message, "description": ""}); err != nil {
		return err
	}
	var inline int64
	for _, f := range c.files {
		if !f.inCommit() {
			continue
		}
		var err error
		if f.lfs {
			err = line("lfsFile", map[string]any{"path": f.path, "algo": "sha256", "oid": f.sha256, "size": f.size})
		} else {
			data, rerr := os.ReadFile(f.local)
			if rerr != nil {
				return rerr
			}
			inline += int64(len(data))
			err = line("file", map[string]string{"path": f.path, "encoding": "base64", "content": base64.StdEncoding.EncodeToString(data)})
		}
		if err != nil {
			return err
		}
	}
	u := fmt.Sprintf("%s/api/models/%s/commit/%s%s", c.hub.Endpoint, c.repoID, url.PathEscape(c.revision), c.query())
	req, err := c.hub.newRequest(ctx, http.MethodPost, u, body.Bytes(), "application/x-ndjson")
	if err != nil {
		return err
	}
	var out struct {
		CommitURL      string `json:"commitUrl"`
		CommitOID      string `json:"commitOid"`
		PullRequestURL string `json:"pullRequestUrl"`
	}
	// Not retried: a commit whose answer was lost would be made twice.
	if _, err := c.hub.doJSON("commit to "+c.repoID, req, &out); err != nil {
		return err
	}
	prog.add(inline)
	res.CommitURL, res.CommitOID, res.PullRequestURL = out.CommitURL, out.CommitOID, out.PullRequestURL
	return nil
}
