package shell

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// hostileNames hold what a terminal obeys: an OSC title, a screen clear,
// 8-bit CSI (as a raw byte and as U+009B), a bidi override, BEL, and a
// quote and a space that would break the word completion types.
var hostileNames = []string{
	"evil/\x1b]0;pwned\x07", "e\x1b[2J", "e\x9b2J", "e\u009b2J", "e\u202egnp.exe", "e\x07", `e"x`, "e x",
}

// hostileService is a Tinker service on loopback whose listings hold
// hostile names next to safe ones, plus extra filler model names. If
// block is set every listing waits for the request to end instead.
func hostileService(t *testing.T, extra int, block bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if block {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		bw := bufio.NewWriter(w)
		defer bw.Flush()
		switch r.URL.Path {
		case "/api/v1/get_server_capabilities":
			bw.WriteString(`{"supported_models":[{"model_name":"safe/model"}`)
			for _, n := range hostileNames {
				fmt.Fprintf(bw, `,{"model_name":%s}`, jsonString(n))
			}
			for i := 0; i < extra; i++ {
				fmt.Fprintf(bw, `,{"model_name":"filler/m-%07d"}`, i)
			}
			bw.WriteString(`]}`)
		case "/api/v1/training_runs":
			bw.WriteString(`{"training_runs":[{"training_run_id":"safe-run","base_model":"b","model_owner":"o","is_lora":true,"corrupted":false,"last_request_time":"2026-01-01T00:00:00Z"}`)
			for _, n := range hostileNames {
				fmt.Fprintf(bw, `,{"training_run_id":%s,"base_model":"b","model_owner":"o","is_lora":true,"corrupted":false,"last_request_time":"2026-01-01T00:00:00Z"}`, jsonString(n))
			}
			bw.WriteString(`],"cursor":{"offset":0,"limit":200,"total_count":9}}`)
		case "/api/v1/checkpoints":
			bw.WriteString(`{"checkpoints":[{"checkpoint_id":"sampler_weights/s","checkpoint_type":"sampler","time":"2026-01-01T00:00:00Z","tinker_path":"tinker://safe-run/sampler_weights/s"}`)
			for _, n := range hostileNames {
				fmt.Fprintf(bw, `,{"checkpoint_id":"sampler_weights/s","checkpoint_type":"sampler","time":"2026-01-01T00:00:00Z","tinker_path":%s}`, jsonString("tinker://"+n))
			}
			bw.WriteString(`],"cursor":{"offset":0,"limit":200,"total_count":9}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

type testBackend struct{ c *tinkerapi.Client }

func (b testBackend) Name() string                       { return "test" }
func (b testBackend) Client() (*tinkerapi.Client, error) { return b.c, nil }

func backendFor(t *testing.T, srv *httptest.Server) builtins.Backend {
	c, err := tinkerapi.New(tinkerapi.Config{BaseURL: srv.URL, APIKey: "tml-candidates"})
	if err != nil {
		t.Fatal(err)
	}
	return testBackend{c}
}

// fetchWithin runs FetchCandidates and fails the test if it hangs (a
// generous limit: a hang detector, not a speed check).
func fetchWithin(t *testing.T, ctx context.Context, b builtins.Backend) Candidates {
	t.Helper()
	got := make(chan Candidates, 1)
	go func() { got <- FetchCandidates(ctx, b) }()
	select {
	case c := <-got:
		return c
	case <-time.After(time.Minute):
		t.Fatal("FetchCandidates still running after a minute")
	}
	return Candidates{}
}

// safeForTerminal: nothing a terminal obeys and nothing that breaks a word.
func safeForTerminal(t *testing.T, what string, names []string) {
	t.Helper()
	for _, n := range names {
		n = strings.TrimSuffix(n, `"`) // the quote completion closes
		if strings.ContainsAny(n, "\x1b\x07\u009b\u202e\"' ") || bytes.IndexByte([]byte(n), 0x9b) >= 0 {
			t.Errorf("%s offers %q", what, n)
		}
	}
}

// Issue 31, item 7: hostile names from the service are never offered, in
// the candidates or in what Tab at the prompt lists; safe ones are.
func TestCandidatesDropHostileNames(t *testing.T) {
	b := backendFor(t, hostileService(t, 0, false))
	c := fetchWithin(t, context.Background(), b)
	for what, names := range map[string][]string{"models": c.Models, "runs": c.Runs, "paths": c.Paths} {
		safeForTerminal(t, what, names)
	}
	if !contains(c.Models, "safe/model") || !contains(c.Runs, "safe-run") || !contains(c.Paths, "tinker://safe-run/sampler_weights/s") {
		t.Errorf("safe names missing: %+v", c)
	}
	var out, errw bytes.Buffer
	in := newTestInterp(&out, &errw)
	in.Env.Backend = b
	for _, line := range []string{`sample("e`, `sample("`, `checkpoint.info("tinker://`} {
		_, got, _ := in.Complete(line, len(line))
		safeForTerminal(t, "Tab after "+line, got)
	}
	if _, got, _ := in.Complete(`sample("sa`, 10); !contains(got, "safe/model") && !contains(got, `safe/model"`) {
		t.Errorf("Tab after sample(\"sa offers %v", got)
	}
}

// Issue 31, item 8: a listing of 10^6 models is cut to candidateModels
// names, and completion at the prompt answers from it.
func TestCandidatesBoundHugeListing(t *testing.T) {
	b := backendFor(t, hostileService(t, 1_000_000, false))
	c := fetchWithin(t, context.Background(), b)
	if len(c.Models) > candidateModels {
		t.Errorf("%d model names kept, want at most %d", len(c.Models), candidateModels)
	}
	var out, errw bytes.Buffer
	in := newTestInterp(&out, &errw)
	in.cands.c = c
	if _, got, _ := in.Complete(`sample("`, 8); len(got) > maxCompletions {
		t.Errorf("Tab lists %d names", len(got))
	}
}

// A fetch that the caller ends (Ctrl-C at Tab) returns at once with the
// names tinker knows, and the prompt does not keep that answer.
func TestCandidatesFetchCancelled(t *testing.T) {
	b := backendFor(t, hostileService(t, 0, true))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := fetchWithin(t, ctx, b)
	if !contains(c.Models, "tinker-local/tiny-llama") || len(c.Runs) != 0 {
		t.Errorf("cancelled fetch gave %+v", c)
	}
	var p promptCandidates
	p.get(ctx, b)
	if !p.c.At.IsZero() {
		t.Error("the prompt kept a cancelled fetch")
	}
}
