package golden

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestCompleteHostileService (issue 31, items 7 and 8): `tinker __complete`
// against a service on loopback whose model names and run ids hold escape
// sequences, 8-bit CSI, a bidi override and BEL, and which lists 10^6
// models: it ends, prints one safe name a line and none of the hostile ones.
func TestCompleteHostileService(t *testing.T) {
	home := t.TempDir()
	for _, filler := range []int{0, 1_000_000} {
		srv := hostileListings(filler)
		for _, kind := range []string{"models", "runs"} {
			cmd := tinkerCmd(t, home, "__complete", kind)
			cmd.Env = append(cmd.Env, "TINKER_BASE_URL="+srv.URL, fmt.Sprintf("TINKER_API_KEY=tml-complete-%s-%d", kind, filler), "XDG_CACHE_HOME="+home+"/cache")
			out := runWithin(t, cmd)
			if strings.ContainsAny(out, "\x1b\x07\u009b\u202e") || strings.Contains(out, "\x9b") {
				t.Errorf("__complete %s wrote a control sequence: %q", kind, out)
			}
			if n := strings.Count(out, "\n"); n > 1000 {
				t.Errorf("__complete %s printed %d names", kind, n)
			}
			// With 10^6 models the listings may not be decoded within the
			// bound (the names tinker knows are offered either way).
			if want := map[string]string{"models": "safe/model", "runs": "safe-run"}[kind]; filler == 0 && !strings.Contains(out, want+"\n") {
				t.Errorf("__complete %s lacks %s", kind, want)
			}
		}
		srv.Close()
	}
}

// hostileListings is a service whose model names and run ids hold escape
// sequences, 8-bit CSI, a bidi override and BEL, and which lists filler
// more models.
func hostileListings(filler int) *httptest.Server {
	hostile := []string{"evil/\x1b]0;pwned\x07", "e\x1b[2J", "e\u009b2J", "e\u202egnp", "e\x07"}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := bufio.NewWriter(w)
		defer bw.Flush()
		item := func(key, v string) { b, _ := json.Marshal(v); fmt.Fprintf(bw, `,{%q:%s}`, key, b) }
		switch r.URL.Path {
		case "/api/v1/get_server_capabilities":
			bw.WriteString(`{"supported_models":[{"model_name":"safe/model"}`)
			for _, n := range hostile {
				item("model_name", n)
			}
			for i := 0; i < filler; i++ {
				fmt.Fprintf(bw, `,{"model_name":"filler/m-%07d"}`, i)
			}
			bw.WriteString(`]}`)
		case "/api/v1/training_runs":
			bw.WriteString(`{"training_runs":[{"training_run_id":"safe-run","base_model":"b","model_owner":"o","is_lora":true,"corrupted":false,"last_request_time":"2026-01-01T00:00:00Z"}`)
			for _, n := range hostile {
				b, _ := json.Marshal(n)
				fmt.Fprintf(bw, `,{"training_run_id":%s,"base_model":"b","model_owner":"o","is_lora":true,"corrupted":false,"last_request_time":"2026-01-01T00:00:00Z"}`, b)
			}
			bw.WriteString(`],"cursor":{"offset":0,"limit":200,"total_count":6}}`)
		default:
			http.NotFound(w, r)
		}
	}))
}

// runWithin runs cmd and returns its stdout, failing the test if it is
// still running after a minute (a hang detector, not a speed check).
func runWithin(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() { out, err := cmd.Output(); done <- result{out, err} }()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("%v: %v", cmd.Args, r.err)
		}
		return string(r.out)
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("%v still running after a minute", cmd.Args)
	}
	return ""
}
