package download

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/archive"
	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/progress"
)

type member struct {
	name string
	typ  byte
	body string
	link string
}

func reg(name, body string) member { return member{name: name, typ: tar.TypeReg, body: body} }

// checkpointMembers is a sampler checkpoint as the service ships it.
func checkpointMembers() []member {
	return []member{
		reg("adapter_config.json", `{"r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"]}`),
		reg("adapter_model.safetensors", safetensorsLike(256<<10)),
		reg(Marker, ""),
	}
}

// safetensorsLike is a safetensors-shaped blob: an 8-byte little-endian
// header length, a JSON header, then tensor bytes.
func safetensorsLike(n int) string {
	hdr := `{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight":{"dtype":"F32","shape":[8,` +
		strconv.Itoa(n/32) + `],"data_offsets":[0,` + strconv.Itoa(n) + `]}}`
	var b strings.Builder
	l := len(hdr)
	b.Write([]byte{byte(l), byte(l >> 8), 0, 0, 0, 0, 0, 0})
	b.WriteString(hdr)
	for i := 0; i < n; i++ {
		b.WriteByte(byte(i * 7))
	}
	return b.String()
}

func makeTar(t testing.TB, members ...member) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range members {
		h := &tar.Header{Name: m.name, Typeflag: m.typ, Mode: 0o644, Size: int64(len(m.body)), Linkname: m.link,
			ModTime: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)}
		if m.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if m.typ == tar.TypeReg {
			io.WriteString(tw, m.body)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// server serves one archive at /ckpt.tar?sig=...; handle, if set, decides
// per request (its 1-based number) and returns true when it answered.
type server struct {
	*httptest.Server
	data     []byte
	requests atomic.Int32
	mu       sync.Mutex
	ranges   []string
	headers  []http.Header
	handle   func(n int, w http.ResponseWriter, r *http.Request) bool
}

func newServer(t testing.TB, data []byte) *server {
	s := &server{data: data}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.requests.Add(1))
		s.mu.Lock()
		s.ranges = append(s.ranges, r.Header.Get("Range"))
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		if s.handle != nil && s.handle(n, w, r) {
			return
		}
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, r, "ckpt.tar", time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), bytes.NewReader(s.data))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) urlFunc() func(context.Context) (string, error) {
	return func(context.Context) (string, error) { return s.URL + "/ckpt.tar?sig=SECRET-SIGNATURE", nil }
}

// opts is a fast-retrying configuration for tests.
func (s *server) opts(parent string) Options {
	return Options{URL: s.urlFunc(), Parent: parent, Name: "run-1:train:0_sampler_weights_final",
		Attempts: 4, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
}

// listing returns every path under dir, relative and sorted.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func checkInstalled(t *testing.T, dir string) {
	t.Helper()
	for _, m := range checkpointMembers() {
		b, err := os.ReadFile(filepath.Join(dir, m.name))
		if err != nil || string(b) != m.body {
			t.Errorf("%s: %d bytes, %v; want %d bytes", m.name, len(b), err, len(m.body))
		}
	}
}

// writeOld puts an existing copy at the target, to check it survives.
func writeOld(t *testing.T, parent, name string) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "old.txt"), []byte("old copy"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func checkOld(t *testing.T, dir string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(dir, "old.txt")); err != nil || string(b) != "old copy" {
		t.Errorf("old copy damaged: %q, %v", b, err)
	}
	if got := listing(t, dir); len(got) != 1 {
		t.Errorf("old copy now holds %v", got)
	}
}

// recorder is a Progress that records what it was told.
type recorder struct {
	mu                sync.Mutex
	total, pos, added int64
	sets              []int64
}

func (r *recorder) SetTotal(n int64) { r.mu.Lock(); r.total = n; r.mu.Unlock() }
func (r *recorder) Set(n int64)      { r.mu.Lock(); r.pos = n; r.sets = append(r.sets, n); r.mu.Unlock() }
func (r *recorder) Add(n int64)      { r.mu.Lock(); r.pos += n; r.added += n; r.mu.Unlock() }

func TestDownloadHappyPath(t *testing.T) {
	data := makeTar(t, checkpointMembers()...)
	s := newServer(t, data)
	parent := filepath.Join(t.TempDir(), "models", "nested") // created on demand
	var rec recorder
	o := s.opts(parent)
	o.Progress = &rec
	res, err := Download(context.Background(), o)
	if err != nil {
		t.Fatalf("Download: %v", err)
	}
	want := filepath.Join(parent, "run-1:train:0_sampler_weights_final")
	if res.Path != want {
		t.Errorf("Path = %q, want %q", res.Path, want)
	}
	checkInstalled(t, res.Path)
	if res.Files != 3 || res.ContentLength != int64(len(data)) || res.Bytes != int64(len(checkpointMembers()[0].body)+256<<10+len(checkpointMembers()[1].body)-256<<10) {
		t.Errorf("result = %+v (archive %d bytes)", res, len(data))
	}
	if rec.total != int64(len(data)) || rec.added != res.ArchiveBytes || rec.added < int64(len(data))-10240 {
		t.Errorf("progress total %d added %d; archive %d, received %d", rec.total, rec.added, len(data), res.ArchiveBytes)
	}
	if got := listing(t, parent); len(got) != 4 {
		t.Errorf("parent holds %v, want the target and its 3 files only", got)
	}
	fi, _ := os.Stat(res.Path)
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("target mode = %v, want 0755", fi.Mode())
	}
	for _, h := range s.headers {
		for k := range h {
			if k != "User-Agent" && k != "Accept-Encoding" {
				t.Errorf("storage request carried header %s", k)
			}
		}
	}
}

func TestDownloadGzipAndSilentProgress(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(makeTar(t, checkpointMembers()...))
	zw.Close()
	s := newServer(t, gz.Bytes())
	parent := t.TempDir()
	var out bytes.Buffer
	bar := progress.NewBytes(&out, false, 80, "Downloading", 0)
	o := s.opts(parent)
	o.Progress = bar
	res, err := Download(context.Background(), o)
	bar.Finish()
	if err != nil {
		t.Fatalf("Download: %v", err)
	}
	checkInstalled(t, res.Path)
	if bar.Done() != int64(gz.Len()) {
		t.Errorf("bar counted %d bytes, want %d", bar.Done(), gz.Len())
	}
	if out.Len() != 0 {
		t.Errorf("progress off a terminal wrote %q", out.String())
	}
}

func TestDownloadRejectsMaliciousArchives(t *testing.T) {
	outside := t.TempDir()
	cases := []struct {
		name string
		bad  member
		want error
	}{
		{"dotdot", reg("../evil", "x"), archive.ErrUnsafePath},
		{"deep dotdot", reg("a/../../../evil", "x"), archive.ErrUnsafePath},
		{"absolute", reg(filepath.Join(outside, "abs-evil"), "x"), archive.ErrUnsafePath},
		{"symlink escaping", member{name: "adapter_model.safetensors", typ: tar.TypeSymlink, link: "../../../../etc/passwd"}, archive.ErrLink},
		{"hardlink escaping", member{name: "hl", typ: tar.TypeLink, link: "../../../../etc/passwd"}, archive.ErrLink},
		{"char device", member{name: "null", typ: tar.TypeChar}, archive.ErrUnsupported},
		{"fifo", member{name: "pipe", typ: tar.TypeFifo}, archive.ErrUnsupported},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ms := append([]member{reg("adapter_config.json", "{}"), tc.bad}, reg(Marker, ""))
			s := newServer(t, makeTar(t, ms...))
			parent := t.TempDir()
			_, err := Download(context.Background(), s.opts(parent))
			if !errors.Is(err, ErrExtract) || !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want ErrExtract and %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), strconv.Quote(tc.bad.name)) {
				t.Errorf("error %q does not name the member", err)
			}
			if got := listing(t, parent); len(got) != 0 {
				t.Errorf("left behind: %v", got)
			}
			if got := listing(t, outside); len(got) != 0 {
				t.Errorf("written outside: %v", got)
			}
			if n := s.requests.Load(); n != 1 {
				t.Errorf("%d requests: an unsafe archive must not be retried", n)
			}
		})
	}
}

func TestDownloadMissingMarker(t *testing.T) {
	s := newServer(t, makeTar(t, checkpointMembers()[:2]...))
	parent := t.TempDir()
	old := writeOld(t, parent, "run-1:train:0_sampler_weights_final")
	o := s.opts(parent)
	o.Force = true
	_, err := Download(context.Background(), o)
	if !errors.Is(err, ErrIncomplete) {
		t.Fatalf("err = %v, want ErrIncomplete", err)
	}
	checkOld(t, old)
	if got := listing(t, parent); len(got) != 2 {
		t.Errorf("parent holds %v, want only the old copy", got)
	}
}

// truncate answers with the full Content-Length but sends only half the
// body, then closes the connection.
func truncate(data []byte) func(int, http.ResponseWriter, *http.Request) bool {
	return func(_ int, w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data[:len(data)/2])
		return true // the server closes: fewer bytes than declared
	}
}

func TestDownloadTruncatedKeepsOldCopy(t *testing.T) {
	data := makeTar(t, checkpointMembers()...)
	s := newServer(t, data)
	s.handle = truncate(data)
	parent := t.TempDir()
	old := writeOld(t, parent, "run-1:train:0_sampler_weights_final")
	o := s.opts(parent)
	o.Force = true
	var retries []int
	o.OnRetry = func(attempt int, _ time.Duration, _ error) { retries = append(retries, attempt) }
	_, err := Download(context.Background(), o)
	if !errors.Is(err, ErrDownload) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want ErrDownload wrapping unexpected EOF", err)
	}
	if n := s.requests.Load(); n != 4 {
		t.Errorf("%d requests, want 4 attempts", n)
	}
	if len(retries) != 3 || retries[0] != 2 {
		t.Errorf("OnRetry attempts = %v", retries)
	}
	checkOld(t, old)
	if got := listing(t, parent); len(got) != 2 {
		t.Errorf("parent holds %v, want only the old copy", got)
	}
}

func TestDownloadRetries503(t *testing.T) {
	s := newServer(t, makeTar(t, checkpointMembers()...))
	s.handle = func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n <= 2 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "archive is being generated", http.StatusServiceUnavailable)
			return true
		}
		return false
	}
	parent := t.TempDir()
	var urls atomic.Int32
	o := s.opts(parent)
	inner := o.URL
	o.URL = func(ctx context.Context) (string, error) { urls.Add(1); return inner(ctx) }
	res, err := Download(context.Background(), o)
	if err != nil {
		t.Fatalf("Download: %v", err)
	}
	checkInstalled(t, res.Path)
	if n := s.requests.Load(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	if urls.Load() != 3 {
		t.Errorf("URL fetched %d times, want once per attempt (3)", urls.Load())
	}
}

func TestDownloadNotFoundIsFinal(t *testing.T) {
	s := newServer(t, nil)
	s.handle = func(int, http.ResponseWriter, *http.Request) bool { return false }
	s.handle = func(_ int, w http.ResponseWriter, _ *http.Request) bool {
		http.NotFound(w, nil)
		return true
	}
	parent := t.TempDir()
	_, err := Download(context.Background(), s.opts(parent))
	var se *StatusError
	if !errors.Is(err, ErrDownload) || !errors.As(err, &se) || se.Code != 404 || err.Error() != "download failed: HTTP Error 404: Not Found" {
		t.Fatalf("err = %v", err)
	}
	if s.requests.Load() != 1 {
		t.Errorf("404 was retried")
	}
	if got := listing(t, parent); len(got) != 0 {
		t.Errorf("left behind: %v", got)
	}
}

// reset sends part of the body and then resets the TCP connection.
func reset(t *testing.T, w http.ResponseWriter, data []byte, n int) {
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("ETag", `"v1"`)
	w.WriteHeader(http.StatusOK)
	w.Write(data[:n])
	w.(http.Flusher).Flush()
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Error(err)
		return
	}
	conn.(*net.TCPConn).SetLinger(0) // close with RST
	conn.Close()
}

func TestDownloadResetRestartsWithoutRanges(t *testing.T) {
	data := makeTar(t, checkpointMembers()...)
	s := newServer(t, data)
	s.handle = func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n == 1 {
			reset(t, w, data, len(data)/3)
			return true
		}
		w.Write(data) // no Range support on retries
		return true
	}
	parent := t.TempDir()
	var rec recorder
	o := s.opts(parent)
	o.Progress = &rec
	res, err := Download(context.Background(), o)
	if err != nil {
		t.Fatalf("Download: %v", err)
	}
	checkInstalled(t, res.Path)
	if got := listing(t, parent); len(got) != 4 {
		t.Errorf("parent holds %v", got)
	}
	if s.requests.Load() < 2 {
		t.Errorf("%d requests", s.requests.Load())
	}
	if len(rec.sets) < 2 || rec.sets[len(rec.sets)-1] != 0 || rec.pos != res.ArchiveBytes {
		t.Errorf("progress sets %v pos %d; want a restart from 0 ending at %d", rec.sets, rec.pos, res.ArchiveBytes)
	}
}

func TestDownloadResetResumesWithRange(t *testing.T) {
	data := makeTar(t, checkpointMembers()...)
	s := newServer(t, data)
	s.handle = func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n == 1 {
			reset(t, w, data, len(data)/3)
			return true
		}
		return false // ServeContent: honours Range and If-Range
	}
	parent := t.TempDir()
	var rec recorder
	o := s.opts(parent)
	o.Progress = &rec
	res, err := Download(context.Background(), o)
	if err != nil {
		t.Fatalf("Download: %v", err)
	}
	checkInstalled(t, res.Path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ranges) != 2 || !strings.HasPrefix(s.ranges[1], "bytes=") {
		t.Fatalf("requests' Range headers = %q, want a second ranged request", s.ranges)
	}
	if s.headers[1].Get("If-Range") != `"v1"` {
		t.Errorf("If-Range = %q", s.headers[1].Get("If-Range"))
	}
	if len(rec.sets) != 1 {
		t.Errorf("progress restarted (%v) although the download resumed", rec.sets)
	}
}

func TestDownloadCancelStalled(t *testing.T) {
	data := makeTar(t, checkpointMembers()...)
	s := newServer(t, data)
	release := make(chan struct{})
	s.handle = func(_ int, w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data[:len(data)/2])
		w.(http.Flusher).Flush()
		select { // stall
		case <-r.Context().Done():
		case <-release:
		}
		return true
	}
	defer close(release)
	parent := t.TempDir()
	old := writeOld(t, parent, "run-1:train:0_sampler_weights_final")
	ctx, cancel := context.WithCancel(context.Background())
	o := s.opts(parent)
	o.Force = true
	o.Progress = &cancelOnProgress{cancel: cancel}
	_, err := Download(ctx, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	checkOld(t, old)
	if got := listing(t, parent); len(got) != 2 {
		t.Errorf("parent holds %v, want only the old copy", got)
	}
}

// cancelOnProgress cancels once the first bytes arrived: the download is
// then mid-body and the server stalls.
type cancelOnProgress struct {
	once   sync.Once
	cancel func()
}

func (c *cancelOnProgress) SetTotal(int64) {}
func (c *cancelOnProgress) Set(int64)      {}
func (c *cancelOnProgress) Add(int64) {
	c.once.Do(func() { time.AfterFunc(50*time.Millisecond, c.cancel) })
}

func TestDownloadIdleTimeout(t *testing.T) {
	data := makeTar(t, checkpointMembers()...)
	s := newServer(t, data)
	s.handle = func(_ int, w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data[:1000])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return true
	}
	parent := t.TempDir()
	o := s.opts(parent)
	o.Attempts = 2
	o.IdleTimeout = 100 * time.Millisecond
	_, err := Download(context.Background(), o)
	if !errors.Is(err, ErrDownload) || !errors.Is(err, errStalled) {
		t.Fatalf("err = %v, want a stall reported as a download failure", err)
	}
	if s.requests.Load() != 2 {
		t.Errorf("%d requests, want 2", s.requests.Load())
	}
	if got := listing(t, parent); len(got) != 0 {
		t.Errorf("left behind: %v", got)
	}
}

func TestDownloadExistingTarget(t *testing.T) {
	s := newServer(t, makeTar(t, checkpointMembers()...))
	parent := t.TempDir()
	old := writeOld(t, parent, "run-1:train:0_sampler_weights_final")
	o := s.opts(parent)
	called := false
	o.URL = func(context.Context) (string, error) { called = true; return "", nil }
	_, err := Download(context.Background(), o)
	if !errors.Is(err, ErrTargetExists) || !strings.Contains(err.Error(), old) {
		t.Fatalf("err = %v, want ErrTargetExists naming %s", err, old)
	}
	if called || s.requests.Load() != 0 {
		t.Errorf("network used although the target exists")
	}
	checkOld(t, old)
}

func TestDownloadForceReplaces(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		t.Run("fallback="+strconv.FormatBool(fallback), func(t *testing.T) {
			if fallback {
				t.Cleanup(atomicfile.DisableAtomicRename())
			}
			s := newServer(t, makeTar(t, checkpointMembers()...))
			parent := t.TempDir()
			writeOld(t, parent, "run-1:train:0_sampler_weights_final")
			o := s.opts(parent)
			o.Force = true
			res, err := Download(context.Background(), o)
			if err != nil {
				t.Fatalf("Download: %v", err)
			}
			checkInstalled(t, res.Path)
			if got := listing(t, parent); len(got) != 4 {
				t.Errorf("parent holds %v, want the new copy only", got)
			}

			// A plain file in the way is replaced too.
			os.RemoveAll(res.Path)
			os.WriteFile(res.Path, []byte("a file"), 0o644)
			if res, err = Download(context.Background(), o); err != nil {
				t.Fatalf("Download over a file: %v", err)
			}
			checkInstalled(t, res.Path)
		})
	}
}

func TestInstallNoReplaceRace(t *testing.T) {
	// The target appears between the early check and the final rename.
	parent := t.TempDir()
	tmp, err := atomicfile.MkdirTemp(parent, ".x.partial-")
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Release()
	target := writeOld(t, parent, "x")
	if err := install(tmp, target, false); !errors.Is(err, ErrTargetExists) {
		t.Fatalf("err = %v, want ErrTargetExists", err)
	}
	checkOld(t, target)
}

func TestErrorsHideSignature(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connection refused
	parent := t.TempDir()
	_, err = Download(context.Background(), Options{
		URL:      func(context.Context) (string, error) { return "http://" + addr + "/a.tar?X-Goog-Signature=SECRET", nil },
		Parent:   parent,
		Name:     "x",
		Attempts: 2, Backoff: time.Millisecond,
	})
	if !errors.Is(err, ErrDownload) {
		t.Fatalf("err = %v, want ErrDownload", err)
	}
	if strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), addr) {
		t.Errorf("error %q leaks the signature or hides the host", err)
	}
}

func TestTargetName(t *testing.T) {
	for in, want := range map[string]string{
		"tinker://run-123/weights/final":              "run-123_weights_final",
		"tinker://79db:train:0/sampler_weights/final": "79db:train:0_sampler_weights_final",
		"run/weights/x": "run_weights_x",
	} {
		if got := TargetName(in); got != want {
			t.Errorf("TargetName(%q) = %q, want %q", in, got, want)
		}
	}
	if p, _ := TargetPath("./models/", "n"); p != filepath.Join("models", "n") {
		t.Errorf("TargetPath = %q", p)
	}
	wd, _ := os.Getwd()
	if p, _ := TargetPath("", "n"); p != filepath.Join(wd, "n") {
		t.Errorf("TargetPath default = %q", p)
	}
}

func TestInvalidName(t *testing.T) {
	for _, name := range []string{"", ".", "..", "a/b", `a\b`} {
		_, err := Download(context.Background(), Options{URL: func(context.Context) (string, error) { return "", nil }, Name: name, Parent: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "invalid target name") {
			t.Errorf("name %q: err = %v", name, err)
		}
	}
}

// BenchmarkDownload measures download+extract of a 64 MiB checkpoint served
// from memory on loopback (make bench-download compares 1 GiB with curl|tar).
func BenchmarkDownload(b *testing.B) {
	weights := strings.Repeat("0123456789abcdef", 4<<20) // 64 MiB
	data := makeTar(b, reg("adapter_config.json", "{}"), reg("adapter_model.safetensors", weights), reg(Marker, ""))
	s := newServer(b, data)
	parent := b.TempDir()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		res, err := Download(context.Background(), s.opts(parent))
		if err != nil {
			b.Fatal(err)
		}
		os.RemoveAll(res.Path)
	}
}

func TestDownloadChunkedWithClickBar(t *testing.T) {
	data := makeTar(t, checkpointMembers()...)
	s := newServer(t, data)
	s.handle = func(_ int, w http.ResponseWriter, _ *http.Request) bool {
		for i := 0; i < len(data); i += 4096 { // no Content-Length: chunked
			w.Write(data[i:min(i+4096, len(data))])
			w.(http.Flusher).Flush()
		}
		return true
	}
	parent := t.TempDir()
	var out bytes.Buffer
	bar := progress.NewClick(&out, false, "Downloading archive", 0)
	o := s.opts(parent)
	o.Progress = bar
	res, err := Download(context.Background(), o)
	bar.Close()
	if err != nil {
		t.Fatalf("Download: %v", err)
	}
	checkInstalled(t, res.Path)
	if res.ContentLength != 0 {
		t.Errorf("ContentLength = %d, want 0 when the header is absent", res.ContentLength)
	}
	if out.String() != "Downloading archive\n" {
		t.Errorf("click bar off a terminal wrote %q", out.String())
	}
}

func TestDownloadLongName(t *testing.T) {
	s := newServer(t, makeTar(t, checkpointMembers()...))
	o := s.opts(t.TempDir())
	o.Name = strings.Repeat("é", 120) // 240 bytes: fits, but not with a temp prefix and suffix
	res, err := Download(context.Background(), o)
	if err != nil {
		t.Fatalf("Download: %v", err)
	}
	checkInstalled(t, res.Path)
}

// A download killed midway leaves its partial directory; the next download
// of the same checkpoint removes it, and leaves others' alone.
func TestDownloadSweepsAbandonedPartial(t *testing.T) {
	s := newServer(t, makeTar(t, checkpointMembers()...))
	parent := t.TempDir()
	abandoned := filepath.Join(parent, ".run-1:train:0_sampler_weights_final.partial-123")
	other := filepath.Join(parent, ".run-2:train:0_sampler_weights_final.partial-123")
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{abandoned, other} {
		os.Mkdir(p, 0o755)
		os.Chtimes(p, old, old)
	}
	if _, err := Download(context.Background(), s.opts(parent)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abandoned); err == nil {
		t.Error("the abandoned partial directory is still there")
	}
	if _, err := os.Stat(other); err != nil {
		t.Error("another checkpoint's partial directory was removed")
	}
}
