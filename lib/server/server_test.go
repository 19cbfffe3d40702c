package server

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

const key = "tml-test-key"

var t0 = time.Date(2026, 7, 13, 5, 0, 0, 0, time.UTC)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type env struct {
	t    *testing.T
	srv  *Server
	url  string
	clk  *clock
	dir  string
	http *http.Client
}

// newEnv starts a server over dir (pre-filled by manifest, if given).
func newEnv(t *testing.T, manifest string, opts Options) *env {
	t.Helper()
	return newEnvIn(t, t.TempDir(), manifest, opts)
}

// newEnvIn is newEnv over a given data directory.
func newEnvIn(t *testing.T, dir, manifest string, opts Options) *env {
	t.Helper()
	clk := &clock{t: t0}
	if manifest != "" {
		if _, err := Import(t.Context(), dir, strings.NewReader(manifest), t0); err != nil {
			t.Fatalf("import: %v", err)
		}
	}
	opts.DataDir, opts.Now, opts.SweepInterval = dir, clk.Now, -1
	if opts.FutureDelay == 0 {
		opts.FutureDelay = 50 * time.Millisecond
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { hs.Close(); s.Close() })
	return &env{t: t, srv: s, url: hs.URL, clk: clk, dir: dir,
		http: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// restart serves s (a reopened server over the same directory) instead.
func (e *env) restart(s *Server) {
	hs := httptest.NewServer(s.Handler())
	e.t.Cleanup(func() { hs.Close(); s.Close() })
	e.srv, e.url = s, hs.URL
}

// do sends a request with the test key and returns status, body.
func (e *env) do(method, path string, body any, hdr ...string) (int, []byte, http.Header) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := e.http.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

func (e *env) getJSON(path string, want int, out any) {
	e.t.Helper()
	code, b, _ := e.do("GET", path, nil)
	if code != want {
		e.t.Fatalf("GET %s = %d %s, want %d", path, code, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("GET %s: %v in %s", path, err, b)
		}
	}
}

func manifestFor(runs, perRun int) string {
	return fmt.Sprintf(`{"owner_key": %q, "generate": {"runs": %d, "checkpoints_per_run": %d, "base_models": ["tinker-local/tiny-llama"], "lora_ranks": [4]}}`, key, runs, perRun)
}

var tsRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

type ckptJSON struct {
	CheckpointID   string  `json:"checkpoint_id"`
	CheckpointType string  `json:"checkpoint_type"`
	Time           string  `json:"time"`
	TinkerPath     string  `json:"tinker_path"`
	SizeBytes      *int64  `json:"size_bytes"`
	Public         bool    `json:"public"`
	ExpiresAt      *string `json:"expires_at"`
}

type listJSON struct {
	Checkpoints []ckptJSON `json:"checkpoints"`
	Cursor      *struct {
		Offset, Limit int
		TotalCount    int `json:"total_count"`
	} `json:"cursor"`
}

func TestAuthAndBootstrap(t *testing.T) {
	e := newEnv(t, "", Options{})
	if code, b, _ := e.do("GET", "/api/v1/healthz", nil, "X-API-Key", ""); code != 200 || string(b) != `{"status":"ok"}` {
		t.Errorf("healthz = %d %s", code, b)
	}
	code, b, h := e.do("GET", "/api/v1/training_runs", nil, "X-API-Key", "")
	if code != 401 || !strings.Contains(string(b), `"detail"`) || h.Get("Content-Type") != "application/json" {
		t.Errorf("no key = %d %s", code, b)
	}
	if code, _, _ := e.do("GET", "/api/v1/training_runs", nil, "X-API-Key", "sk-nope"); code != 401 {
		t.Errorf("non-tml key = %d", code)
	}
	var caps struct {
		SupportedModels []struct {
			ModelName        string `json:"model_name"`
			MaxContextLength int    `json:"max_context_length"`
		} `json:"supported_models"`
	}
	e.getJSON("/api/v1/get_server_capabilities", 200, &caps)
	if len(caps.SupportedModels) < 20 || caps.SupportedModels[0].ModelName != "tinker-local/tiny-llama" {
		t.Errorf("capabilities = %+v", caps)
	}
	if code, b, _ := e.do("POST", "/api/v1/client/config", map[string]string{"sdk_version": "0.25.0"}); code != 200 || !strings.Contains(string(b), `"pjwt_auth_enabled":false`) {
		t.Errorf("client/config = %d %s", code, b)
	}
	if code, _, _ := e.do("POST", "/api/v1/client/dynamic_config", map[string]string{"sdk_version": "0.25.0"}); code != 200 {
		t.Errorf("dynamic_config = %d", code)
	}
	if code, b, _ := e.do("POST", "/api/v1/telemetry", map[string]any{"events": []any{}}); code != 200 || string(b) != `{"status":"accepted"}` {
		t.Errorf("telemetry = %d %s", code, b)
	}
	if code, b, _ := e.do("GET", "/api/v1/nope", nil); code != 404 || string(b) != `{"detail":"Not Found"}` {
		t.Errorf("unknown = %d %s", code, b)
	}
	if code, _, _ := e.do("PATCH", "/api/v1/training_runs", nil); code != 405 {
		t.Errorf("wrong method = %d", code)
	}

	// With configured keys only those work, and each is its own user.
	e2 := newEnv(t, "", Options{APIKeys: []string{key, "other-key"}})
	if code, _, _ := e2.do("GET", "/api/v1/training_runs", nil, "X-API-Key", "tml-unknown"); code != 401 {
		t.Errorf("unconfigured key = %d", code)
	}
	if code, _, _ := e2.do("GET", "/api/v1/training_runs", nil, "X-API-Key", "other-key"); code != 200 {
		t.Errorf("configured key = %d", code)
	}
	if OwnerURN(key) == OwnerURN("other-key") || !strings.HasPrefix(OwnerURN(key), "tml:organization_user:") {
		t.Error("owner URNs")
	}
}

func TestListenRefusesPublicWithoutKeys(t *testing.T) {
	if err := checkAddr("0.0.0.0:8080", false); err == nil || !strings.Contains(err.Error(), "--api-key") {
		t.Errorf("0.0.0.0 without keys: %v", err)
	}
	if err := checkAddr("0.0.0.0:8080", true); err != nil {
		t.Errorf("with keys: %v", err)
	}
	for _, a := range []string{"127.0.0.1:0", "[::1]:0", "localhost:9"} {
		if err := checkAddr(a, false); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
	s, err := Open(Options{DataDir: t.TempDir(), SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Start("0.0.0.0:0"); err == nil {
		t.Error("Start on 0.0.0.0 without keys should fail")
	}
	u, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u + "/api/v1/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("started server: %v", err)
	}
	resp.Body.Close()
}

func TestListingAndPagination(t *testing.T) {
	e := newEnv(t, manifestFor(3, 10), Options{})
	var page listJSON
	e.getJSON("/api/v1/checkpoints?limit=7&offset=0", 200, &page)
	if page.Cursor == nil || page.Cursor.TotalCount != 30 || page.Cursor.Limit != 7 || len(page.Checkpoints) != 7 {
		t.Fatalf("first page: %+v", page.Cursor)
	}
	var all []ckptJSON
	for off := 0; off < 30; off += 7 {
		var p listJSON
		e.getJSON(fmt.Sprintf("/api/v1/checkpoints?limit=7&offset=%d", off), 200, &p)
		all = append(all, p.Checkpoints...)
	}
	if len(all) != 30 {
		t.Fatalf("got %d checkpoints", len(all))
	}
	seen := map[string]bool{}
	for i, c := range all {
		if seen[c.TinkerPath] {
			t.Errorf("duplicate %s", c.TinkerPath)
		}
		seen[c.TinkerPath] = true
		if i > 0 && c.Time > all[i-1].Time {
			t.Errorf("not newest first at %d: %s > %s", i, c.Time, all[i-1].Time)
		}
		if !tsRE.MatchString(c.Time) {
			t.Errorf("timestamp format %q", c.Time)
		}
		if c.SizeBytes == nil || *c.SizeBytes <= 0 {
			t.Errorf("size_bytes missing on %s", c.TinkerPath)
		}
		wantType := map[bool]string{true: "training", false: "sampler"}[strings.HasPrefix(c.CheckpointID, "weights/")]
		if c.CheckpointType != wantType || !strings.HasSuffix(c.TinkerPath, "/"+c.CheckpointID) {
			t.Errorf("inconsistent %+v", c)
		}
	}
	if all[0].CheckpointID != "sampler_weights/final" {
		t.Errorf("newest = %s", all[0].CheckpointID)
	}

	var runs struct {
		TrainingRuns []map[string]any `json:"training_runs"`
		Cursor       map[string]int   `json:"cursor"`
	}
	e.getJSON("/api/v1/training_runs?limit=2&offset=1&access_scope=owned", 200, &runs)
	if len(runs.TrainingRuns) != 2 || runs.Cursor["total_count"] != 3 || runs.Cursor["offset"] != 1 {
		t.Fatalf("runs page = %+v", runs)
	}
	r0 := runs.TrainingRuns[0]
	for _, k := range []string{"training_run_id", "base_model", "model_owner", "is_lora", "corrupted", "lora_rank", "last_request_time", "last_checkpoint", "last_sampler_checkpoint", "user_metadata"} {
		if _, ok := r0[k]; !ok {
			t.Errorf("run lacks %s", k)
		}
	}
	if r0["model_owner"] != OwnerURN(key) || r0["lora_rank"] != 4.0 {
		t.Errorf("run = %v", r0)
	}
	runID := r0["training_run_id"].(string)
	var one map[string]any
	e.getJSON("/api/v1/training_runs/"+runID, 200, &one)
	if one["last_sampler_checkpoint"].(map[string]any)["checkpoint_id"] != "sampler_weights/final" {
		t.Errorf("last sampler = %v", one["last_sampler_checkpoint"])
	}
	// Percent-encoded run ids are decoded before routing.
	e.getJSON("/api/v1/training_runs/"+strings.ReplaceAll(runID, ":", "%3A"), 200, nil)

	var per listJSON
	code, b, _ := e.do("GET", "/api/v1/training_runs/"+runID+"/checkpoints", nil)
	if code != 200 || !strings.HasSuffix(string(b), `"cursor":null}`) {
		t.Fatalf("per-run = %d %s", code, b)
	}
	json.Unmarshal(b, &per)
	if len(per.Checkpoints) != 10 {
		t.Errorf("per-run count %d", len(per.Checkpoints))
	}

	// Another user sees nothing of ours.
	code, b, _ = e.do("GET", "/api/v1/checkpoints", nil, "X-API-Key", "tml-someone-else")
	if code != 200 || !strings.Contains(string(b), `"total_count":0`) {
		t.Errorf("other user = %s", b)
	}
	if code, _, _ := e.do("GET", "/api/v1/training_runs/"+runID, nil, "X-API-Key", "tml-someone-else"); code != 404 {
		t.Errorf("other user's run get = %d", code)
	}
	if code, _, _ := e.do("GET", "/api/v1/checkpoints?limit=-1", nil); code != 422 {
		t.Errorf("bad limit = %d", code)
	}
}

func firstRun(e *env) string {
	var runs struct {
		TrainingRuns []struct {
			ID string `json:"training_run_id"`
		} `json:"training_runs"`
	}
	e.getJSON("/api/v1/training_runs", 200, &runs)
	return runs.TrainingRuns[0].ID
}

func TestPublishTTLDelete(t *testing.T) {
	e := newEnv(t, manifestFor(1, 4), Options{})
	run := firstRun(e)
	ck := "/api/v1/training_runs/" + run + "/checkpoints/sampler_weights/0000"
	if code, b, _ := e.do("DELETE", ck+"/publish", nil); code != 409 || !strings.Contains(string(b), "already private") {
		t.Errorf("unpublish private = %d %s", code, b)
	}
	if code, _, _ := e.do("POST", ck+"/publish", nil); code != 200 {
		t.Errorf("publish = %d", code)
	}
	if code, b, _ := e.do("POST", ck+"/publish", nil); code != 409 || !strings.Contains(string(b), "already public") {
		t.Errorf("publish twice = %d %s", code, b)
	}
	// Public: visible to others through weights_info and accessible runs.
	var wi map[string]any
	code, b, _ := e.do("POST", "/api/v1/weights_info", map[string]string{"tinker_path": "tinker://" + run + "/sampler_weights/0000"}, "X-API-Key", "tml-other")
	json.Unmarshal(b, &wi)
	if code != 200 || wi["base_model"] != "tinker-local/tiny-llama" || wi["lora_rank"] != 4.0 || wi["is_lora"] != true {
		t.Errorf("weights_info = %d %s", code, b)
	}
	if code, _, _ := e.do("POST", "/api/v1/weights_info", map[string]string{"tinker_path": "tinker://" + run + "/weights/0000"}, "X-API-Key", "tml-other"); code != 404 {
		t.Errorf("private weights_info for other = %d", code)
	}
	if code, _, _ := e.do("POST", "/api/v1/weights_info", map[string]string{"tinker_path": "nope"}); code != 400 {
		t.Errorf("bad path weights_info = %d", code)
	}
	code, b, _ = e.do("GET", "/api/v1/training_runs?access_scope=accessible", nil, "X-API-Key", "tml-other")
	if code != 200 || !strings.Contains(string(b), `"total_count":1`) {
		t.Errorf("accessible = %s", b)
	}
	if code, _, _ := e.do("POST", ck+"/publish", nil, "X-API-Key", "tml-other"); code != 404 {
		t.Errorf("publish by non-owner = %d", code)
	}

	// TTL: validation, expiry on read, then the sweeper removes rows and files.
	if code, _, _ := e.do("PUT", ck+"/ttl", map[string]any{"ttl_seconds": 0}); code != 400 {
		t.Errorf("ttl 0 = %d", code)
	}
	if code, _, _ := e.do("PUT", ck+"/ttl", map[string]any{"ttl_seconds": -5}); code != 400 {
		t.Errorf("ttl -5 = %d", code)
	}
	if code, _, _ := e.do("PUT", ck+"/ttl", map[string]any{"ttl_seconds": 3600}); code != 200 {
		t.Errorf("ttl = %d", code)
	}
	var per listJSON
	e.getJSON("/api/v1/training_runs/"+run+"/checkpoints", 200, &per)
	for _, c := range per.Checkpoints {
		if c.CheckpointID == "sampler_weights/0000" && (c.ExpiresAt == nil || *c.ExpiresAt != "2026-07-13T06:00:00.000000Z") {
			t.Errorf("expires_at = %v", c.ExpiresAt)
		}
	}
	// Materialise the files so we can see them go.
	if code, _, _ := e.do("GET", ck+"/archive", nil); code != 302 {
		t.Fatalf("archive = %d", code)
	}
	dir := e.srv.checkpointDir(run, "sampler_weights", "0000")
	if _, err := os.Stat(filepath.Join(dir, peft.WeightsFile)); err != nil {
		t.Fatal(err)
	}
	// Clearing and re-setting works.
	if code, _, _ := e.do("PUT", ck+"/ttl", map[string]any{"ttl_seconds": nil}); code != 200 {
		t.Errorf("clear ttl = %d", code)
	}
	e.do("PUT", ck+"/ttl", map[string]any{"ttl_seconds": 60})
	e.clk.Add(61 * time.Second)
	e.getJSON("/api/v1/training_runs/"+run+"/checkpoints", 200, &per)
	if len(per.Checkpoints) != 3 {
		t.Errorf("after expiry: %d checkpoints", len(per.Checkpoints))
	}
	var page listJSON
	e.getJSON("/api/v1/checkpoints", 200, &page)
	if page.Cursor.TotalCount != 3 {
		t.Errorf("after expiry total %d", page.Cursor.TotalCount)
	}
	if code, _, _ := e.do("GET", ck+"/archive", nil); code != 404 {
		t.Errorf("archive of expired = %d", code)
	}
	if n, err := e.srv.Sweep(); n != 1 || err != nil {
		t.Errorf("sweep = %d %v", n, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("expired checkpoint files remain: %v", err)
	}

	// Delete removes the row and the files.
	del := "/api/v1/training_runs/" + run + "/checkpoints/weights/0000"
	e.do("GET", del+"/archive", nil)
	wdir := e.srv.checkpointDir(run, "weights", "0000")
	if _, err := os.Stat(wdir); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := e.do("DELETE", del, nil, "X-API-Key", "tml-other"); code != 404 {
		t.Errorf("delete by other = %d", code)
	}
	if code, _, _ := e.do("DELETE", del, nil); code != 200 {
		t.Errorf("delete = %d", code)
	}
	if _, err := os.Stat(wdir); !os.IsNotExist(err) {
		t.Errorf("deleted checkpoint files remain")
	}
	if code, _, _ := e.do("DELETE", del, nil); code != 404 {
		t.Errorf("delete twice = %d", code)
	}
}

func TestArchiveSignedURL(t *testing.T) {
	e := newEnv(t, manifestFor(1, 2), Options{})
	run := firstRun(e)
	path := "/api/v1/training_runs/" + run + "/checkpoints/sampler_weights/final/archive"
	code, _, h := e.do("GET", path, nil, "Accept", "application/json")
	if code != 302 {
		t.Fatalf("archive = %d", code)
	}
	loc := h.Get("Location")
	exp, err := http.ParseTime(h.Get("Expires"))
	if !strings.HasPrefix(loc, e.url+"/files/") || err != nil || !exp.Equal(t0.Add(time.Hour)) {
		t.Fatalf("Location %q Expires %q", loc, h.Get("Expires"))
	}
	// Plain GET, no API key.
	resp, err := http.Get(loc)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-tar" {
		t.Fatalf("download = %d %s", resp.StatusCode, resp.Header)
	}
	var per listJSON
	e.getJSON("/api/v1/training_runs/"+run+"/checkpoints", 200, &per)
	var size int64
	for _, c := range per.Checkpoints {
		if c.CheckpointID == "sampler_weights/final" {
			size = *c.SizeBytes
		}
	}
	tr := tar.NewReader(bytes.NewReader(body))
	var names []string
	var total int64
	files := map[string][]byte{}
	for {
		hd, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[hd.Name] = b
		names = append(names, hd.Name)
		total += hd.Size
	}
	if strings.Join(names, ",") != "adapter_config.json,adapter_model.safetensors,checkpoint_complete" {
		t.Errorf("members = %v", names)
	}
	if total != size {
		t.Errorf("files total %d, size_bytes %d", total, size)
	}
	sf, err := safetensors.Parse(files[peft.WeightsFile])
	if err != nil {
		t.Fatal(err)
	}
	q, ok := sf.Tensor("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight")
	if !ok || q.DType != safetensors.BF16 || q.Shape[0] != 4 || q.Shape[1] != 64 {
		t.Errorf("q_proj A = %+v", q)
	}

	// Range requests.
	req, _ := http.NewRequest("GET", loc, nil)
	req.Header.Set("Range", "bytes=512-1023")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 206 || !bytes.Equal(part, body[512:1024]) {
		t.Errorf("range = %d, %d bytes", resp.StatusCode, len(part))
	}

	// Tampered signature and expired URL are 403.
	bad := strings.Replace(loc, "sig=", "sig=x", 1)
	if resp, _ := http.Get(bad); resp.StatusCode != 403 {
		t.Errorf("bad sig = %d", resp.StatusCode)
	}
	other := strings.Replace(loc, "/files/", "/files/A", 1)
	if resp, _ := http.Get(other); resp.StatusCode != 403 {
		t.Errorf("other token = %d", resp.StatusCode)
	}
	e.clk.Add(time.Hour + time.Second)
	if resp, _ := http.Get(loc); resp.StatusCode != 403 {
		t.Errorf("expired url = %d", resp.StatusCode)
	}
	if code, _, _ := e.do("GET", path, nil, "X-API-Key", "tml-other"); code != 404 {
		t.Errorf("archive by other = %d", code)
	}
}

func TestLargeArchiveIsGeneratedInBackground(t *testing.T) {
	e := newEnv(t, manifestFor(1, 1), Options{ArchiveSyncLimit: 1})
	run := firstRun(e)
	path := "/api/v1/training_runs/" + run + "/checkpoints/weights/final/archive"
	code, b, h := e.do("GET", path, nil)
	if code != 503 || h.Get("Retry-After") == "" || !strings.Contains(string(b), "being generated") {
		t.Fatalf("first = %d %s", code, b)
	}
	e.srv.archives.wait()
	if code, _, _ := e.do("GET", path, nil); code != 302 {
		t.Fatalf("after generation = %d", code)
	}
}

// Files generated for an archive are removed after an idle hour and made
// again on the next request.
func TestGeneratedArchiveIsRemovedWhenIdle(t *testing.T) {
	e := newEnv(t, manifestFor(1, 1), Options{ArchiveSyncLimit: 1})
	run := firstRun(e)
	path := "/api/v1/training_runs/" + run + "/checkpoints/weights/final/archive"
	dir := e.srv.checkpointDir(run, "weights", "final")
	if code, _, _ := e.do("GET", path, nil); code != 503 {
		t.Fatalf("first = %d", code)
	}
	e.srv.archives.wait()
	e.clk.Add(50 * time.Minute)
	if code, _, _ := e.do("GET", path, nil); code != 302 { // a use
		t.Fatalf("after generation = %d", code)
	}
	e.clk.Add(50 * time.Minute)
	if _, err := e.srv.Sweep(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("files used 50 minutes ago were removed: %v", err)
	}
	e.clk.Add(11 * time.Minute)
	if _, err := e.srv.Sweep(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("idle generated files still on disk: %v", err)
	}
	if code, _, _ := e.do("GET", path, nil); code != 503 {
		t.Fatalf("after removal = %d, want generation again", code)
	}
	e.srv.archives.wait()
	if code, _, _ := e.do("GET", path, nil); code != 302 {
		t.Fatalf("after regeneration = %d", code)
	}
}

func TestRoutingEscapesAndOrphanCleanup(t *testing.T) {
	e := newEnv(t, manifestFor(1, 2), Options{})
	run := firstRun(e)
	enc := strings.ReplaceAll(run, ":", "%3A")
	// An encoded slash in the checkpoint id routes like a raw one.
	if code, b, _ := e.do("POST", "/api/v1/training_runs/"+enc+"/checkpoints/weights%2F0000/publish", nil); code != 200 {
		t.Fatalf("encoded publish = %d %s", code, b)
	}
	if code, _, _ := e.do("GET", "/api/v1/training_runs/"+run+"/checkpoints/weights/0000/archive", nil); code != 302 {
		t.Fatal("archive")
	}
	sess := e.newSession()
	code, b, _ := e.do("POST", "/api/v1/create_sampling_session", map[string]any{"session_id": sess.SessionID, "sampling_session_seq_id": 0, "model_path": "tinker://" + run + "/weights/0000"})
	if code != 400 || !strings.Contains(string(b), "save sampler weights") {
		t.Errorf("sampling a weights path = %d %s", code, b)
	}
	live := e.srv.checkpointDir(run, "weights", "0000")
	orphan := e.srv.checkpointDir(run, "weights", "gone")
	tmp := filepath.Join(filepath.Dir(live), ".0001.tmp-123")
	for _, d := range []string{orphan, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A temporary directory is swept once no writer holds it and it is
	// older than a writer takes to lock it.
	long := time.Now().Add(-time.Hour)
	os.Chtimes(tmp, long, long)
	e.srv.Close()
	s, err := Open(Options{DataDir: e.dir, Now: e.clk.Now, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, d := range []string{orphan, tmp} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s not cleaned up", d)
		}
	}
	if _, err := os.Stat(filepath.Join(live, peft.CompleteFile)); err != nil {
		t.Errorf("live checkpoint files removed: %v", err)
	}
}

func TestListenAndServeStopsOnCancel(t *testing.T) {
	s, err := Open(Options{DataDir: t.TempDir(), SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.ListenAndServe(t.Context(), "0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "non-loopback") {
		t.Fatalf("public addr without keys: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe(ctx, "127.0.0.1:0") }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ListenAndServe after cancel: %v", err)
	}
}

// newSession creates a session the way the SDK does and returns its id.
func (e *env) newSession() (sess struct {
	SessionID string `json:"session_id"`
}) {
	e.t.Helper()
	e.post("/api/v1/create_session", map[string]any{"tags": []string{}, "user_metadata": map[string]string{}, "sdk_version": "0.25.0"}, &sess)
	return sess
}
