package app

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/term"
)

// These tests check the exact requests the compatible subcommands send
// against a recording fake of the Tinker API. Each test names the rules it
// checks by their heading in docs/compat.md.

// seen is one request the fake received.
type seen struct {
	Method, URI, Body string
	APIKey            string
}

type fakeAPI struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []seen
	handle func(w http.ResponseWriter, r *http.Request) bool
}

func newFakeAPI(t *testing.T, handle func(w http.ResponseWriter, r *http.Request) bool) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, handle: handle}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	t.Setenv("TINKER_BASE_URL", f.srv.URL)
	t.Setenv("TINKER_API_KEY", "tml-test")
	t.Setenv("TINKER_NOW", "2026-11-22T12:00:00Z")
	t.Setenv("TINKER_CREDENTIAL_CMD", "")
	t.Setenv("TINKER_LOG", "")
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, seen{r.Method, r.RequestURI, string(body), r.Header.Get("X-API-Key")})
	f.mu.Unlock()
	if f.handle != nil && f.handle(w, r) {
		return
	}
	switch r.URL.Path {
	case "/api/v1/client/config":
		reply(w, 200, `{}`)
	default:
		reply(w, 404, `{"detail": "Not Found"}`)
	}
}

// api returns the requests after the handshake, as "METHOD URI".
func (f *fakeAPI) api() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, q := range f.reqs {
		if !strings.HasPrefix(q.URI, "/api/v1/client/") {
			out = append(out, q.Method+" "+q.URI)
		}
	}
	return out
}

func (f *fakeAPI) all() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.reqs...)
}

func reply(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// run runs tinker with args and stdin, returning exit code, stdout, stderr.
// Trailing spaces are stripped from stdout's lines, as compatibility
// comparisons do (Rich pads titles).
func run(stdin string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, term.Test(strings.NewReader(stdin), &out, &errb))
	lines := strings.Split(out.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return code, strings.Join(lines, "\n"), errb.String()
}

func checkpointJSON(run, kind, name string) string {
	typ := "training"
	if kind == "sampler_weights" {
		typ = "sampler"
	}
	return fmt.Sprintf(`{"checkpoint_id": "%s/%s", "checkpoint_type": "%s", "time": "2026-11-20T10:00:00Z", "tinker_path": "tinker://%s/%s/%s", "size_bytes": 1024, "public": false, "expires_at": null}`,
		kind, name, typ, run, kind, name)
}

func runJSON(i int) string {
	return fmt.Sprintf(`{"training_run_id": "run-%d", "base_model": "Qwen/Qwen3-8B", "model_owner": "me", "is_lora": true, "corrupted": false, "lora_rank": 32, "last_request_time": "2026-11-22T11:00:00Z", "last_checkpoint": null, "last_sampler_checkpoint": null, "user_metadata": null}`, i)
}

// pager serves an offset-paginated listing of total items; short, if set,
// cuts the page at that offset to n items.
func pager(total int, key string, item func(i int) string, nullCursor bool, short map[int]int) func(r *http.Request) string {
	return func(r *http.Request) string {
		q := r.URL.Query()
		limit, _ := strconv.Atoi(q.Get("limit"))
		off, _ := strconv.Atoi(q.Get("offset"))
		end := min(off+limit, total)
		if n, ok := short[off]; ok {
			end = min(end, off+n)
		}
		var items []string
		for i := off; i < end; i++ {
			items = append(items, item(i))
		}
		cursor := fmt.Sprintf(`{"offset": %d, "limit": %d, "total_count": %d}`, off, limit, total)
		if nullCursor {
			cursor = "null"
		}
		return fmt.Sprintf(`{%q: [%s], "cursor": %s}`, key, strings.Join(items, ", "), cursor)
	}
}

func runsServer(t *testing.T, total int, short map[int]int) *fakeAPI {
	page := pager(total, "training_runs", runJSON, false, short)
	return newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/api/v1/training_runs" {
			reply(w, 200, page(r))
			return true
		}
		return false
	})
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

func TestPreflightFirstNoSession(t *testing.T) { // docs/compat.md, "Startup and credentials"
	f := runsServer(t, 3, nil)
	if code, _, stderr := run("", "run", "list"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	reqs := f.all()
	if len(reqs) == 0 || reqs[0].Method != "POST" || reqs[0].URI != "/api/v1/client/config" {
		t.Fatalf("first request %+v, want POST /api/v1/client/config", reqs)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(reqs[0].Body), &body); err != nil || body["sdk_version"] == nil {
		t.Fatalf("client/config body %q lacks sdk_version", reqs[0].Body)
	}
	for _, q := range reqs {
		if strings.Contains(q.URI, "session") {
			t.Errorf("a CLI command created a session: %s %s", q.Method, q.URI)
		}
	}
}

func TestRunListRequests(t *testing.T) { // docs/compat.md, "Listing runs and checkpoints"
	cases := []struct {
		name   string
		args   []string
		total  int
		short  map[int]int
		want   []string
		stdout string // a line stdout must start with
		title  string // a substring of stdout
	}{
		{name: "default", args: []string{"run", "list"}, total: 250,
			want:  []string{"GET /api/v1/training_runs?limit=20&offset=0&access_scope=owned"},
			title: "20 training runs (230 more not shown, use --limit to see more)"},
		{name: "all", args: []string{"run", "list", "--limit", "0"}, total: 250,
			want: []string{
				"GET /api/v1/training_runs?limit=100&offset=0&access_scope=owned",
				"GET /api/v1/training_runs?limit=100&offset=100&access_scope=owned",
				"GET /api/v1/training_runs?limit=50&offset=200&access_scope=owned",
			},
			stdout: "Fetching all training runs\n", title: "250 training runs\n"},
		{name: "150", args: []string{"run", "list", "--limit", "150"}, total: 250,
			want: []string{
				"GET /api/v1/training_runs?limit=100&offset=0&access_scope=owned",
				"GET /api/v1/training_runs?limit=50&offset=100&access_scope=owned",
			},
			stdout: "Fetching 150 training runs\n", title: "150 training runs (100 more not shown, use --limit to see more)"},
		{name: "negative", args: []string{"run", "list", "--limit", "-5"}, total: 250,
			stdout: "Fetching 250 training runs\n", title: "250 training runs\n"},
		// The server's count promised more than it had: the listing ends at
		// the short page.
		{name: "short page", args: []string{"run", "list", "--limit", "0"}, total: 250, short: map[int]int{100: 30},
			title: "130 training runs (120 more not shown, use --limit to see more)"},
		{name: "json has no label", args: []string{"-f", "json", "run", "list", "--limit", "0"}, total: 150,
			stdout: "{\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := runsServer(t, tc.total, tc.short)
			code, stdout, stderr := run("", tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if tc.want != nil && !slices.Equal(sorted(f.api()), sorted(tc.want)) {
				// Pages after the first are fetched concurrently, so only
				// the set of requests is fixed.
				t.Errorf("requests\n%s\nwant\n%s", strings.Join(f.api(), "\n"), strings.Join(tc.want, "\n"))
			}
			if tc.want != nil && f.api()[0] != tc.want[0] {
				t.Errorf("first request %s, want %s", f.api()[0], tc.want[0])
			}
			if tc.stdout != "" && !strings.HasPrefix(stdout, tc.stdout) {
				t.Errorf("stdout starts %q, want %q", firstLine(stdout), tc.stdout)
			}
			if tc.title != "" && !strings.Contains(stdout, tc.title) {
				t.Errorf("stdout lacks %q:\n%s", tc.title, stdout)
			}
		})
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

func TestRunListJSONCountsEveryRun(t *testing.T) {
	runsServer(t, 250, nil)
	code, stdout, stderr := run("", "-f", "json", "run", "list", "--limit", "0", "-c", "id")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 250 || out.Runs[249]["training_run_id"] != "run-249" || len(out.Runs[0]) != 10 {
		t.Fatalf("got %d runs, last %v, %d fields", len(out.Runs), out.Runs[len(out.Runs)-1]["training_run_id"], len(out.Runs[0]))
	}
}

func TestRunInfoRequest(t *testing.T) { // docs/compat.md, "Listing runs and checkpoints"
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/api/v1/training_runs/run-1" {
			reply(w, 200, runJSON(1))
			return true
		}
		return false
	})
	if code, _, stderr := run("", "run", "info", "run-1"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := f.api(); !slices.Equal(got, []string{"GET /api/v1/training_runs/run-1?access_scope=owned"}) {
		t.Fatalf("requests %q", got)
	}
}

func checkpointsServer(t *testing.T, total int, nullCursor bool) *fakeAPI {
	page := pager(total, "checkpoints", func(i int) string { return checkpointJSON("run-1", "weights", fmt.Sprintf("%04d", i)) }, nullCursor, nil)
	return newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) bool {
		switch r.URL.Path {
		case "/api/v1/checkpoints":
			reply(w, 200, page(r))
			return true
		case "/api/v1/training_runs/run-1/checkpoints":
			reply(w, 200, `{"checkpoints": [`+checkpointJSON("run-1", "weights", "0001")+", "+checkpointJSON("run-1", "sampler_weights", "0001")+`]}`)
			return true
		}
		return false
	})
}

func TestCheckpointListRequests(t *testing.T) { // docs/compat.md, "Listing runs and checkpoints"
	cases := []struct {
		name       string
		args       []string
		total      int
		nullCursor bool
		want       []string
		title      string
	}{
		{name: "default", args: []string{"checkpoint", "list"}, total: 2500,
			want:  []string{"GET /api/v1/checkpoints?limit=20&offset=0"},
			title: "20 checkpoints (2480 more not shown"},
		{name: "all", args: []string{"checkpoint", "list", "--limit", "0"}, total: 2500,
			want: []string{
				"GET /api/v1/checkpoints?limit=1000&offset=0",
				"GET /api/v1/checkpoints?limit=1000&offset=1000",
				"GET /api/v1/checkpoints?limit=500&offset=2000",
			},
			title: "Fetching all checkpoints\n"},
		{name: "1500", args: []string{"checkpoint", "list", "--limit", "1500"}, total: 2500,
			want: []string{
				"GET /api/v1/checkpoints?limit=1000&offset=0",
				"GET /api/v1/checkpoints?limit=500&offset=1000",
			},
			title: "1500 checkpoints (1000 more not shown, use --limit to see more)"},
		{name: "null cursor", args: []string{"checkpoint", "list", "--limit", "0"}, total: 1200, nullCursor: true,
			want:  []string{"GET /api/v1/checkpoints?limit=1000&offset=0"},
			title: "1000 checkpoints\n"},
		{name: "run id", args: []string{"checkpoint", "list", "--run-id", "run-1", "--limit", "1"}, total: 0,
			want:  []string{"GET /api/v1/training_runs/run-1/checkpoints"},
			title: "2 checkpoints for run run-1\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := checkpointsServer(t, tc.total, tc.nullCursor)
			code, stdout, stderr := run("", tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !slices.Equal(sorted(f.api()), sorted(tc.want)) || f.api()[0] != tc.want[0] {
				t.Errorf("requests\n%s\nwant\n%s", strings.Join(f.api(), "\n"), strings.Join(tc.want, "\n"))
			}
			if !strings.Contains(stdout, tc.title) {
				t.Errorf("stdout lacks %q:\n%.300s", tc.title, stdout)
			}
		})
	}
}

func TestCheckpointInfoRequests(t *testing.T) { // docs/compat.md, "Checkpoint info and mutations"
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) bool {
		switch r.URL.Path {
		case "/api/v1/training_runs/run-1/checkpoints":
			reply(w, 200, `{"checkpoints": [`+checkpointJSON("run-1", "weights", "0001")+`]}`)
		case "/api/v1/training_runs/run-1":
			reply(w, 200, runJSON(1))
		default:
			return false
		}
		return true
	})
	code, stdout, stderr := run("", "-f", "json", "checkpoint", "info", "tinker://run-1/weights/0001")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := []string{"GET /api/v1/training_runs/run-1/checkpoints", "GET /api/v1/training_runs/run-1?access_scope=owned"}
	if got := f.api(); !slices.Equal(got, want) {
		t.Fatalf("requests %q, want %q", got, want)
	}
	if !strings.HasSuffix(stdout, "\"is_lora\": true,\n  \"lora_rank\": 32\n}\n") {
		t.Errorf("JSON does not end with is_lora, lora_rank:\n%s", stdout)
	}
}

func TestCheckpointMutationRequests(t *testing.T) { // docs/compat.md, "Checkpoint info and mutations"
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasPrefix(r.URL.Path, "/api/v1/training_runs/") {
			reply(w, 200, `{}`)
			return true
		}
		return false
	})
	cases := []struct {
		args []string
		want seen
	}{
		{[]string{"checkpoint", "publish", "tinker://r/weights/1"}, seen{Method: "POST", URI: "/api/v1/training_runs/r/checkpoints/weights/1/publish"}},
		{[]string{"checkpoint", "unpublish", "tinker://r/sampler_weights/1"}, seen{Method: "DELETE", URI: "/api/v1/training_runs/r/checkpoints/sampler_weights/1/publish"}},
		{[]string{"checkpoint", "set-ttl", "tinker://r/weights/1", "--ttl", "3600"}, seen{Method: "PUT", URI: "/api/v1/training_runs/r/checkpoints/weights/1/ttl", Body: `{"ttl_seconds":3600}`}},
		{[]string{"checkpoint", "set-ttl", "tinker://r/weights/1", "--remove"}, seen{Method: "PUT", URI: "/api/v1/training_runs/r/checkpoints/weights/1/ttl", Body: `{"ttl_seconds":null}`}},
		{[]string{"checkpoint", "set-ttl", "tinker://r/weights/1", "--ttl", "0"}, seen{Method: "PUT", URI: "/api/v1/training_runs/r/checkpoints/weights/1/ttl", Body: `{"ttl_seconds":0}`}},
		{[]string{"checkpoint", "set-ttl", "tinker://r/weights/1", "--ttl", "-5"}, seen{Method: "PUT", URI: "/api/v1/training_runs/r/checkpoints/weights/1/ttl", Body: `{"ttl_seconds":-5}`}},
	}
	for _, tc := range cases {
		before := len(f.all())
		code, stdout, stderr := run("", tc.args...)
		if code != 0 || stdout != "" {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", tc.args, code, stdout, stderr)
		}
		var got []seen
		for _, q := range f.all()[before:] {
			if !strings.HasPrefix(q.URI, "/api/v1/client/") {
				got = append(got, q)
			}
		}
		if len(got) != 1 || got[0].Method != tc.want.Method || got[0].URI != tc.want.URI || compact(got[0].Body) != tc.want.Body {
			t.Errorf("%v: sent %+v, want %+v", tc.args, got, tc.want)
		}
	}
}

// compact removes insignificant JSON whitespace.
func compact(s string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return s
	}
	return b.String()
}

func TestDeleteBadPathSendsNothing(t *testing.T) { // docs/compat.md, "Checkpoint info and mutations"
	f := newFakeAPI(t, nil)
	code, _, stderr := run("", "checkpoint", "delete", "-y", "tinker://r/weights/1", "bad")
	if code != 1 || !strings.HasPrefix(stderr, "Error: Invalid checkpoint path: bad\n") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if got := f.api(); len(got) != 0 {
		t.Fatalf("requests sent: %q", got)
	}
}

// deleteServer answers DELETEs, holding each until release is closed and
// recording the most requests in flight at once.
type deleteServer struct {
	*fakeAPI
	release  chan struct{}
	arrived  chan struct{}
	mu       sync.Mutex
	inflight int
	maxIn    int
}

func newDeleteServer(t *testing.T) *deleteServer {
	d := &deleteServer{release: make(chan struct{}), arrived: make(chan struct{}, 1000)}
	d.fakeAPI = newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodDelete {
			return false
		}
		d.mu.Lock()
		d.inflight++
		d.maxIn = max(d.maxIn, d.inflight)
		d.mu.Unlock()
		d.arrived <- struct{}{}
		<-d.release
		d.mu.Lock()
		d.inflight--
		d.mu.Unlock()
		reply(w, 200, `{}`)
		return true
	})
	return d
}

func paths(n int) []string {
	p := make([]string, n)
	for i := range p {
		p[i] = fmt.Sprintf("tinker://r/weights/%04d", i)
	}
	return p
}

func TestDeleteRuns32AtOnce(t *testing.T) { // docs/compat.md, "Checkpoint info and mutations"
	d := newDeleteServer(t)
	go func() {
		for i := 0; i < 32; i++ {
			<-d.arrived
		}
		close(d.release) // all 32 slots are busy: let them finish
	}()
	code, stdout, stderr := run("", append([]string{"-f", "json", "checkpoint", "delete", "-y"}, paths(40)...)...)
	if code != 0 || stdout != "{\"deleted_count\": 40, \"failed\": []}\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if d.maxIn != 32 {
		t.Fatalf("at most %d deletions in flight, want 32", d.maxIn)
	}
}

func TestDeleteInterruptStopsSubmitting(t *testing.T) { // docs/compat.md, "Fixed quirks"
	d := newDeleteServer(t)
	go func() {
		for i := 0; i < 32; i++ {
			<-d.arrived
		}
		syscall.Kill(os.Getpid(), syscall.SIGINT)
		time.Sleep(100 * time.Millisecond) // let the handler cancel the context
		close(d.release)
	}()
	code, stdout, stderr := run("", append([]string{"checkpoint", "delete", "-y"}, paths(100)...)...)
	if code != 1 || stderr != "\nAborted!\n" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if n := len(d.api()); n != 32 {
		t.Errorf("%d DELETEs sent after the interrupt, want the 32 already submitted", n)
	}
	for _, want := range []string{"Deleted 32 checkpoint(s)\n", "Not attempted (interrupted): 68 checkpoint(s):\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%.400s", want, stdout)
		}
	}
}

func TestInterruptAborts(t *testing.T) { // docs/compat.md, "API errors and retries"
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/api/v1/training_runs" {
			syscall.Kill(os.Getpid(), syscall.SIGINT)
			<-r.Context().Done() // stall until the client gives up
			return true
		}
		return false
	})
	code, stdout, stderr := run("", "run", "list")
	if code != 1 || stderr != "\nAborted!\n" || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	_ = f
}

func TestRetriedStatuses(t *testing.T) { // docs/compat.md, "API errors and retries"
	for _, status := range []int{503, 500, 429, 408} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Path != "/api/v1/training_runs/run-1" {
					return false
				}
				mu.Lock()
				n++
				first := n == 1
				mu.Unlock()
				if first {
					reply(w, status, `{"detail": "try again"}`)
				} else {
					reply(w, 200, runJSON(1))
				}
				return true
			})
			code, _, stderr := run("", "run", "info", "run-1")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if got := len(f.api()); got != 2 {
				t.Fatalf("%d requests, want a retry after %d", got, status)
			}
		})
	}
}

// checkpointTar is a minimal checkpoint archive.
func checkpointTar(t *testing.T) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	mtime := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	for name, body := range map[string]string{"adapter_config.json": `{"r": 8}`, "checkpoint_complete": ""} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, body)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDownloadRequests(t *testing.T) { // docs/compat.md, "Downloads"
	archive := checkpointTar(t)
	for _, mode := range []string{"redirect", "json"} {
		t.Run(mode, func(t *testing.T) {
			var f *fakeAPI
			f = newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) bool {
				switch r.URL.Path {
				case "/api/v1/training_runs/run-1/checkpoints/weights/0001/archive":
					signed := f.srv.URL + "/signed/archive.tar?sig=x"
					if mode == "redirect" {
						w.Header().Set("Location", signed)
						w.WriteHeader(http.StatusFound)
					} else {
						reply(w, 200, fmt.Sprintf(`{"url": %q, "expires": "2026-11-22T12:15:00Z"}`, signed))
					}
				case "/signed/archive.tar":
					w.Header().Set("Content-Length", strconv.Itoa(len(archive)))
					w.Write(archive)
				default:
					return false
				}
				return true
			})
			dir := t.TempDir()
			code, stdout, stderr := run("", "-f", "json", "checkpoint", "download", "tinker://run-1/weights/0001", "-o", dir)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if stderr != "Creating checkpoint archive for run id: run-1 checkpoint id: weights/0001 (this may take a while)\n" {
				t.Errorf("stderr %q", stderr)
			}
			dest := filepath.Join(dir, "run-1_weights_0001")
			want := fmt.Sprintf("{\n  \"checkpoint_path\": \"tinker://run-1/weights/0001\",\n  \"destination\": %q,\n  \"file_size_bytes\": %d\n}\n", dest, len(archive))
			if stdout != want {
				t.Errorf("stdout %q, want %q", stdout, want)
			}
			var signed []seen
			for _, q := range f.all() {
				if strings.HasPrefix(q.URI, "/signed/") {
					signed = append(signed, q)
				}
			}
			if len(signed) != 1 || signed[0].APIKey != "" {
				t.Errorf("signed URL fetched %d times, with key %q; want once without credentials", len(signed), signed[0].APIKey)
			}
			st, err := os.Stat(filepath.Join(dest, "adapter_config.json"))
			if err != nil || !st.ModTime().Equal(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)) {
				t.Errorf("extracted file %v, err %v; want the archive's mtime", st, err)
			}
		})
	}
}

func TestBillingRequests(t *testing.T) { // docs/compat.md, "Billing"
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/api/v1/billing/usage/events" {
			reply(w, 200, `{"data": [], "sessions": {}}`)
			return true
		}
		return false
	})
	for _, tc := range []struct{ a, b, want string }{
		{"2026-07-13T00:00:00Z", "2026-07-14T00:00:00+00:00", "GET /api/v1/billing/usage/events?starting_on=2026-07-13T00%3A00%3A00Z&ending_before=2026-07-14T00%3A00%3A00Z"},
		{"2026-07-13", "2026-07-14", "GET /api/v1/billing/usage/events?starting_on=2026-07-13T00%3A00%3A00&ending_before=2026-07-14T00%3A00%3A00"},
		{"2026-07-13T02:00:00+02:00", "2026-07-14T00:00:00Z", "GET /api/v1/billing/usage/events?starting_on=2026-07-13T02%3A00%3A00%2B02%3A00&ending_before=2026-07-14T00%3A00%3A00Z"},
	} {
		before := len(f.api())
		code, stdout, stderr := run("", "billing", "usage", tc.a, tc.b)
		if code != 0 || stdout != "\n" {
			t.Fatalf("%s %s: exit %d, stdout %q, stderr %s", tc.a, tc.b, code, stdout, stderr)
		}
		if got := f.api()[before:]; len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s %s: sent %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
	// Bad dates: no billing request at all.
	before := len(f.api())
	if code, _, stderr := run("", "billing", "usage", "yesterday", "today"); code != 1 || !strings.HasPrefix(stderr, "Error: Unexpected error occurred: ") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if got := f.api()[before:]; len(got) != 0 {
		t.Fatalf("sent %q", got)
	}
}

func TestUnknownColumnsSendNothing(t *testing.T) { // docs/compat.md, "Listing runs and checkpoints"
	f := newFakeAPI(t, nil)
	code, _, stderr := run("", "run", "list", "-c", "id,foo,bar")
	if code != 1 || stderr != "Error: Unexpected error occurred: Unknown column(s): foo, bar. Available: id, model, owner, lora, updated, status, checkpoint, checkpoint_time\n" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if n := len(f.all()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

const billingBody = `{"data": [
 {"bucket_start": "2026-07-13T05:00:00Z", "bucket_end": "2026-07-13T06:00:00Z", "base_model": "Qwen/Qwen3-8B", "user_id": "u1", "user_name": "Ann, B", "session_id": "abc", "project_id": null, "extra": 1,
  "event_info": {"type": "training", "token_count": 10}},
 {"bucket_start": "2026-07-13T05:00:00Z", "bucket_end": "2026-07-13T06:00:00Z", "base_model": null, "user_id": "u1", "user_name": null, "session_id": null, "project_id": null,
  "event_info": {"type": "storage", "gigabyte_hours": 2.0}},
 {"bucket_start": "2026-07-13T06:00:00Z", "bucket_end": "2026-07-13T07:00:00Z", "base_model": "Qwen/Qwen3-8B", "user_id": "u1", "user_name": null, "session_id": "def", "project_id": "p",
  "event_info": {"type": "sampling_prefill", "cached": true, "token_count": 5}}
], "sessions": {"abc": {"user_metadata": {"k": "v", "é": "x"}}, "def": {"user_metadata": null}}}`

func TestBillingOutputs(t *testing.T) { // docs/compat.md, "Billing"
	newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/api/v1/billing/usage/events" {
			reply(w, 200, billingBody)
			return true
		}
		return false
	})
	args := []string{"billing", "usage", "2026-07-13T00:00:00Z", "2026-07-14T00:00:00Z"}
	code, stdout, stderr := run("", append(args, "--sessions-csv", "-", "--csv", "-")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "session_id,user_metadata\r\n" +
		"abc,\"{\"\"k\"\": \"\"v\"\", \"\"\\u00e9\"\": \"\"x\"\"}\"\r\n" +
		"def,\r\n" +
		"bucket_start,bucket_end,base_model,user_id,user_name,session_id,project_id,type,token_count,gigabyte_hours,cached\r\n" +
		"2026-07-13T05:00:00Z,2026-07-13T06:00:00Z,Qwen/Qwen3-8B,u1,\"Ann, B\",abc,,training,10,,\r\n" +
		"2026-07-13T05:00:00Z,2026-07-13T06:00:00Z,,u1,,,,storage,,2.0,\r\n" +
		"2026-07-13T06:00:00Z,2026-07-13T07:00:00Z,Qwen/Qwen3-8B,u1,,def,p,sampling_prefill,5,,True\r\n"
	if stdout != want {
		t.Errorf("CSV\n%q\nwant\n%q", stdout, want)
	}

	code, stdout, stderr = run("", append([]string{"-f", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got, exp any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	expJSON := `{"data": [
 {"bucket_start": "2026-07-13T05:00:00Z", "bucket_end": "2026-07-13T06:00:00Z", "base_model": "Qwen/Qwen3-8B", "user_id": "u1", "user_name": "Ann, B", "session_id": "abc", "project_id": null,
  "event_info": {"type": "training", "token_count": 10}},
 {"bucket_start": "2026-07-13T05:00:00Z", "bucket_end": "2026-07-13T06:00:00Z", "base_model": null, "user_id": "u1", "user_name": null, "session_id": null, "project_id": null,
  "event_info": {"type": "storage", "gigabyte_hours": 2.0}},
 {"bucket_start": "2026-07-13T06:00:00Z", "bucket_end": "2026-07-13T07:00:00Z", "base_model": "Qwen/Qwen3-8B", "user_id": "u1", "user_name": null, "session_id": "def", "project_id": "p",
  "event_info": {"type": "sampling_prefill", "cached": true, "token_count": 5}}
], "sessions": {"abc": {"user_metadata": {"k": "v", "é": "x"}}, "def": {"user_metadata": null}}}`
	json.Unmarshal([]byte(expJSON), &exp)
	if !jsonEqual(got, exp) {
		t.Errorf("JSON\n%s\nis not parsed-equal to\n%s", stdout, expJSON)
	}
	if !strings.Contains(stdout, `"gigabyte_hours": 2.0`) || !strings.Contains(stdout, `"\u00e9": "x"`) {
		t.Errorf("JSON lacks Python float repr or ASCII escapes:\n%s", stdout)
	}

	code, stdout, _ = run("", args...)
	if code != 0 || !strings.HasPrefix(stdout, "3 hourly usage row(s)") && !strings.Contains(firstLine(stdout), "3 hourly usage row(s)") {
		t.Errorf("table title: %q", firstLine(stdout))
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestDownloadFailures(t *testing.T) { // docs/compat.md, "Downloads", "Fixed quirks"
	var evil bytes.Buffer
	tw := tar.NewWriter(&evil)
	tw.WriteHeader(&tar.Header{Name: "../evil", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	io.WriteString(tw, "x")
	tw.Close()
	var link bytes.Buffer
	tw = tar.NewWriter(&link)
	tw.WriteHeader(&tar.Header{Name: "adapter_model.safetensors", Linkname: "/etc/passwd", Typeflag: tar.TypeSymlink})
	tw.Close()
	var f *fakeAPI
	f = newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.URL.Path == "/signed/link":
			w.Write(link.Bytes())
		case strings.HasSuffix(r.URL.Path, "/archive"):
			name := strings.Split(r.URL.Path, "/")[7] // …/weights/<name>/archive
			w.Header().Set("Location", f.srv.URL+"/signed/"+name)
			w.WriteHeader(http.StatusFound)
		case r.URL.Path == "/signed/evil":
			w.Write(evil.Bytes())
		case r.URL.Path == "/signed/gone":
			http.NotFound(w, r)
		default:
			return false
		}
		return true
	})
	dir := t.TempDir()
	code, _, stderr := run("", "checkpoint", "download", "tinker://run-1/weights/gone", "-o", dir)
	wantErr := "Error: Failed to download checkpoint: HTTP Error 404: Not Found\nPlease check your network connection and try again.\n"
	if code != 1 || !strings.HasSuffix(stderr, wantErr) {
		t.Errorf("exit %d, stderr %q, want it to end with %q", code, stderr, wantErr)
	}
	code, _, stderr = run("", "checkpoint", "download", "tinker://run-1/weights/link", "-o", dir)
	wantErr = "Error: Failed to extract archive: Unsafe symlink or hardlink in tar archive\n"
	if code != 1 || !strings.Contains(stderr, wantErr) {
		t.Errorf("exit %d, stderr %q, want %q", code, stderr, wantErr)
	}
	// An existing copy survives a failed --force download, and nothing
	// half-written is left behind.
	old := filepath.Join(dir, "run-1_weights_evil")
	os.MkdirAll(old, 0o755)
	os.WriteFile(filepath.Join(old, "keep"), []byte("old"), 0o644)
	code, _, stderr = run("", "checkpoint", "download", "tinker://run-1/weights/evil", "-o", dir, "--force")
	wantErr = "Error: Failed to extract archive: Unsafe path in tar archive\nThe downloaded file may be corrupted. Try downloading again.\n"
	if code != 1 || !strings.HasSuffix(stderr, wantErr) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(old, "keep")); err != nil || string(b) != "old" {
		t.Errorf("old copy damaged: %q, %v", b, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("leftovers in the output directory: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "evil")); err == nil {
		t.Errorf("../evil was written")
	}
}

// interruptingReader sends SIGINT when the prompt first reads, then blocks.
type interruptingReader struct{ block chan struct{} }

func (r interruptingReader) Read([]byte) (int, error) {
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	<-r.block
	return 0, io.EOF
}

func TestInterruptAtDeletePrompt(t *testing.T) {
	f := newFakeAPI(t, nil)
	in := interruptingReader{make(chan struct{})}
	defer close(in.block)
	var out, errb bytes.Buffer
	code := Main([]string{"checkpoint", "delete", "tinker://r/weights/1"}, term.Test(in, &out, &errb))
	if code != 1 || errb.String() != "\nAborted!\n" {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if !strings.HasSuffix(out.String(), "[y/N]: ") {
		t.Errorf("stdout %q does not end at the prompt", out.String())
	}
	if got := f.api(); len(got) != 0 {
		t.Errorf("requests after the interrupt: %q", got)
	}
}
