package server

import (
	"archive/tar"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/store"
)

// signedURLTTL is how long archive and trace download URLs stay valid.
const signedURLTTL = time.Hour

// archiver materialises checkpoint files on first use. Imported and newly
// created checkpoints are recorded with their seed and shape only; the files
// are generated deterministically when someone first asks for the archive,
// so size_bytes (computed from the same plan) is exact before any byte exists.
type archiver struct {
	s      *Server
	group  singleflight.Group
	wg     sync.WaitGroup
	mu     sync.Mutex
	failed map[string]error // background generation failures, by dir
}

func newArchiver(s *Server) *archiver { return &archiver{s: s, failed: map[string]error{}} }

func (a *archiver) wait() { a.wg.Wait() }

type planKey struct {
	base             string
	rank             int
	attn, mlp, unemb bool
	dtype            safetensors.DType
}

// dtypeFor: sampler checkpoints are bf16 (what samplers load); training
// checkpoints keep full float32 precision.
func dtypeFor(kind string) safetensors.DType {
	if kind == "sampler_weights" {
		return safetensors.BF16
	}
	return safetensors.F32
}

// plan returns the adapter plan of a checkpoint of run (cached by shape).
func (a *archiver) plan(run store.Run, kind string, seed uint64) (*peft.Plan, error) {
	return planFor(run, kind, seed)
}

// plans caches adapter plans by shape (seed 0); planFor copies and seeds one.
var plans sync.Map

func planFor(run store.Run, kind string, seed uint64) (*peft.Plan, error) {
	k := planKey{run.BaseModel, run.LoraRank, run.TrainAttn, run.TrainMLP, run.TrainUnembed, dtypeFor(kind)}
	if v, ok := plans.Load(k); ok {
		p := *v.(*peft.Plan)
		p.Config.Seed = seed
		return &p, nil
	}
	p, err := peft.NewPlan(peft.Config{BaseModel: run.BaseModel, Rank: run.LoraRank, TrainAttn: run.TrainAttn,
		TrainMLP: run.TrainMLP, TrainUnembed: run.TrainUnembed, DType: k.dtype})
	if err != nil {
		return nil, err
	}
	plans.Store(k, p)
	cp := *p
	cp.Config.Seed = seed
	return &cp, nil
}

// Size is the exact size_bytes of a checkpoint of run.
func (a *archiver) size(run store.Run, kind string) (int64, error) {
	p, err := a.plan(run, kind, 0)
	if err != nil {
		return 0, err
	}
	return p.Size(), nil
}

func (a *archiver) ready(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, peft.CompleteFile))
	return err == nil
}

// materialise writes the checkpoint's files if they are missing. With
// background, it returns at once (errArchivePending) and generates in a goroutine.
func (a *archiver) materialise(c store.Checkpoint, background bool) error {
	dir := a.s.checkpointDir(c.RunID, c.Kind, c.Name)
	if a.ready(dir) {
		return nil
	}
	run, ok := a.s.st.Run(c.RunID, a.s.now())
	if !ok {
		return fmt.Errorf("training run %s of checkpoint is missing", c.RunID)
	}
	gen := func() (any, error) {
		if a.ready(dir) {
			return nil, nil
		}
		p, err := a.plan(run.Run, c.Kind, c.Seed)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		if err := p.WriteDir(dir); err != nil {
			return nil, err
		}
		// A delete that raced with generation must not leave files behind.
		if _, ok := a.s.st.Checkpoint(c.RunID, c.Kind, c.Name, a.s.now()); !ok {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("checkpoint %s was deleted", c.TinkerPath())
		}
		a.s.opts.Logf("generated %s (%d bytes) in %s", c.TinkerPath(), p.Size(), time.Since(start).Round(time.Millisecond))
		return nil, nil
	}
	if !background {
		_, err, _ := a.group.Do(dir, gen)
		return err
	}
	a.mu.Lock()
	if err := a.failed[dir]; err != nil {
		delete(a.failed, dir)
		a.mu.Unlock()
		return err
	}
	a.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if _, err, _ := a.group.Do(dir, gen); err != nil {
			a.s.opts.Logf("generate %s: %v", c.TinkerPath(), err)
			a.mu.Lock()
			a.failed[dir] = err
			a.mu.Unlock()
		}
	}()
	return errArchivePending
}

var errArchivePending = errors.New("archive is being generated")

func (a *archiver) remove(runID, kind, name string) error {
	dir := a.s.checkpointDir(runID, kind, name)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove checkpoint files: %w", err)
	}
	return nil
}

// ---- signed URLs ----------------------------------------------------------

func (s *Server) sign(token string, exp int64) string {
	m := hmac.New(sha256.New, s.st.Secret())
	fmt.Fprintf(m, "%s.%d", token, exp)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// signedURL returns an absolute URL on this server for a file token.
func (s *Server) signedURL(r *http.Request, fields []string, filename string) (string, time.Time) {
	token := base64.RawURLEncoding.EncodeToString([]byte(strings.Join(fields, "\x00")))
	exp := s.now().Add(signedURLTTL).Truncate(time.Second)
	u := "http://" + r.Host + "/files/" + token + "/" + url.PathEscape(filename) +
		"?exp=" + strconv.FormatInt(exp.Unix(), 10) + "&sig=" + s.sign(token, exp.Unix())
	return u, exp
}

func (s *Server) archive(w http.ResponseWriter, r *http.Request, owner string, seg []string) *apiError {
	runID, kind, name := seg[1], seg[3], seg[4]
	c, ok := s.st.Checkpoint(runID, kind, name, s.now())
	if !ok || (c.Owner != owner && !c.Public) {
		return errorf(http.StatusNotFound, "Checkpoint tinker://%s/%s/%s not found", runID, kind, name)
	}
	if err := s.archives.materialise(c, c.SizeBytes > s.opts.ArchiveSyncLimit); err != nil {
		if errors.Is(err, errArchivePending) {
			w.Header().Set("Retry-After", "5")
			return errorf(http.StatusServiceUnavailable, "Checkpoint archive is being generated; retry shortly")
		}
		return errorf(http.StatusInternalServerError, "generate archive for %s: %v", c.TinkerPath(), err)
	}
	u, exp := s.signedURL(r, []string{"c", runID, kind, name}, runID+"_"+kind+"_"+name+".tar")
	h := w.Header()
	h.Set("Location", u)
	h.Set("Expires", exp.UTC().Format(http.TimeFormat))
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusFound)
	return nil
}

// serveFile answers GET /files/<token>/<name>?exp=&sig= without auth, with
// Range support. It returns the status for the access log.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, rest string) int {
	fail := func(status int, msg string) int {
		writeError(w, errorf(status, "%s", msg))
		return status
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return fail(http.StatusMethodNotAllowed, "Method Not Allowed")
	}
	token, _, _ := strings.Cut(rest, "/")
	q := r.URL.Query()
	exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
	if err != nil || !hmac.Equal([]byte(q.Get("sig")), []byte(s.sign(token, exp))) {
		return fail(http.StatusForbidden, "Invalid signature: request a new download URL")
	}
	if s.now().Unix() >= exp {
		return fail(http.StatusForbidden, "This download URL has expired: request a new one")
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return fail(http.StatusForbidden, "Invalid signature: request a new download URL")
	}
	f := strings.Split(string(raw), "\x00")
	switch {
	case len(f) == 4 && f[0] == "c":
		return s.serveArchive(w, r, f[1], f[2], f[3])
	case len(f) == 2 && f[0] == "t":
		return s.traces.serve(w, r, f[1])
	}
	return fail(http.StatusNotFound, "Not Found")
}

func (s *Server) serveArchive(w http.ResponseWriter, r *http.Request, runID, kind, name string) int {
	c, ok := s.st.Checkpoint(runID, kind, name, s.now())
	if !ok {
		writeError(w, errorf(http.StatusNotFound, "Checkpoint no longer exists"))
		return http.StatusNotFound
	}
	if err := s.archives.materialise(c, false); err != nil {
		writeError(w, errorf(http.StatusInternalServerError, "generate archive: %v", err))
		return http.StatusInternalServerError
	}
	vt, err := openTar(s.checkpointDir(runID, kind, name), c.Time)
	if err != nil {
		writeError(w, errorf(http.StatusInternalServerError, "open archive: %v", err))
		return http.StatusInternalServerError
	}
	defer vt.close()
	w.Header().Set("Content-Type", "application/x-tar")
	if r.Method == http.MethodGet && r.Header.Get("Range") == "" && r.Header.Get("If-Modified-Since") == "" && r.Header.Get("If-None-Match") == "" {
		// Whole-archive fast path: stream the parts in order so the file
		// contents go out with sendfile instead of through a user-space copy.
		h := w.Header()
		h.Set("Content-Length", strconv.FormatInt(vt.size, 10))
		h.Set("Accept-Ranges", "bytes")
		h.Set("Last-Modified", c.Time.UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusOK)
		vt.writeTo(w)
		return http.StatusOK
	}
	rec := &recorder{ResponseWriter: w, status: 200}
	http.ServeContent(rec, r, "", c.Time, io.NewSectionReader(vt, 0, vt.size))
	return rec.status
}

// tarView is a seekable, uncompressed tar of a checkpoint directory's three
// files, built from 512-byte headers, the files themselves and zero padding,
// so nothing is copied and Range requests are cheap.
type tarView struct {
	*multiReaderAt
	files []*os.File
}

func (v *tarView) close() {
	for _, f := range v.files {
		f.Close()
	}
}

// writeTo streams every part in order; *os.File parts go through
// io.Copy, which lets net/http use sendfile.
func (v *tarView) writeTo(w io.Writer) error {
	for i, p := range v.parts {
		var err error
		if f, ok := p.(*os.File); ok {
			_, err = io.Copy(w, io.LimitReader(f, v.sizes[i]))
		} else {
			_, err = io.Copy(w, io.NewSectionReader(p, 0, v.sizes[i]))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func openTar(dir string, mtime time.Time) (*tarView, error) {
	var parts []io.ReaderAt
	var sizes []int64
	v := &tarView{}
	for _, n := range []string{peft.ConfigFile, peft.WeightsFile, peft.CompleteFile} {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			v.close()
			return nil, err
		}
		v.files = append(v.files, f)
		st, err := f.Stat()
		if err != nil {
			v.close()
			return nil, err
		}
		var hb bytes.Buffer
		tw := tar.NewWriter(&hb)
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Size: st.Size(), Mode: 0o644,
			ModTime: mtime.Truncate(time.Second), Format: tar.FormatUSTAR}); err != nil {
			v.close()
			return nil, err
		}
		parts = append(parts, bytes.NewReader(hb.Bytes()[:512]), f)
		sizes = append(sizes, 512, st.Size())
		if pad := (512 - st.Size()%512) % 512; pad > 0 {
			parts = append(parts, zeros{})
			sizes = append(sizes, pad)
		}
	}
	parts = append(parts, zeros{})
	sizes = append(sizes, 1024) // end-of-archive marker
	v.multiReaderAt = newMultiReaderAt(parts, sizes)
	return v, nil
}

type zeros struct{}

func (zeros) ReadAt(p []byte, off int64) (int, error) {
	clear(p)
	return len(p), nil
}

type multiReaderAt struct {
	parts []io.ReaderAt
	offs  []int64 // start offset of each part
	sizes []int64
	size  int64
}

func newMultiReaderAt(parts []io.ReaderAt, sizes []int64) *multiReaderAt {
	m := &multiReaderAt{parts: parts, sizes: sizes, offs: make([]int64, len(parts))}
	for i, n := range sizes {
		m.offs[i] = m.size
		m.size += n
	}
	return m
}

func (m *multiReaderAt) ReadAt(p []byte, off int64) (int, error) {
	total := 0
	for i := range m.parts {
		if len(p) == 0 {
			break
		}
		start, end := m.offs[i], m.offs[i]+m.sizes[i]
		if off >= end || off+int64(len(p)) <= start {
			continue
		}
		within := off - start
		n := min(int64(len(p)), end-off)
		got, err := m.parts[i].ReadAt(p[:n], within)
		total += got
		if int64(got) < n {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF // a file shrank under us
			}
			return total, err
		}
		p, off = p[n:], off+n
	}
	if len(p) > 0 {
		return total, io.EOF
	}
	return total, nil
}
