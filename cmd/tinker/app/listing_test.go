package app

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/term"
)

// A page that fails mid-listing leaves stdout empty (nothing half-written
// to a file it is redirected to), the official CLI's error block on stderr
// and a non-zero exit; the same listing whole is valid JSON with every
// checkpoint, in the server's order, though pages are fetched concurrently
// and finish out of order (the earlier ones are served the slowest).
func TestCheckpointListJSONAllOrNothing(t *testing.T) {
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("broken=%v", broken), func(t *testing.T) {
			page := pager(9500, "checkpoints", func(i int) string { return checkpointJSON("run-1", "weights", fmt.Sprintf("%04d", i)) }, false, nil)
			newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Path != "/api/v1/checkpoints" {
					return false
				}
				off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
				if broken && off == 6000 { // page 7 of 10: a required field missing
					reply(w, 200, `{"checkpoints": [{"checkpoint_id": "x"}], "cursor": {"offset": 6000, "limit": 1000, "total_count": 9500}}`)
					return true
				}
				time.Sleep(time.Duration(9-off/1000) * time.Millisecond)
				reply(w, 200, page(r))
				return true
			})
			code, stdout, stderr := run("", "-f", "json", "checkpoint", "list", "--limit", "0")
			if broken {
				if code == 0 || stdout != "" || !strings.HasPrefix(stderr, "Error: ") || !strings.Contains(stderr, "invalid for expected schema") {
					t.Fatalf("exit %d, stdout %.200q, stderr %q: want a non-zero exit, nothing on stdout, the schema error on stderr", code, stdout, stderr)
				}
				return
			}
			var got struct {
				Checkpoints []struct {
					CheckpointID string `json:"checkpoint_id"`
				}
			}
			if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil || len(got.Checkpoints) != 9500 {
				t.Fatalf("exit %d, %d checkpoints, %v; stderr %s", code, len(got.Checkpoints), err, stderr)
			}
			for i, c := range got.Checkpoints {
				if want := fmt.Sprintf("weights/%04d", i); c.CheckpointID != want {
					t.Fatalf("checkpoint %d is %s, want %s: not the server's order", i, c.CheckpointID, want)
				}
			}
		})
	}
}

// TestCheckpointListJSONWithoutCollection: the whole of a 10,000-entry
// listing stays live until it is printed, so a collection while the pages
// arrive is pure cost; the subcommand gives the collector room to skip it.
// The listing runs in a child process (this test binary again) so that only
// its own heap counts, with GODEBUG=gctrace=1 printing a line per cycle.
func TestCheckpointListJSONWithoutCollection(t *testing.T) {
	if os.Getenv("TINKER_TEST_LIST_CHILD") == "1" {
		if code := Main([]string{"-f", "json", "checkpoint", "list", "--limit", "0"}, term.Test(strings.NewReader(""), io.Discard, os.Stderr)); code != 0 {
			os.Exit(code)
		}
		return
	}
	page := pager(10000, "checkpoints", func(i int) string { return checkpointJSON("run-1", "weights", fmt.Sprintf("%05d", i)) }, false, nil)
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/api/v1/checkpoints" {
			return false
		}
		body := page(r) // with its length, as servers send a page
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		reply(w, 200, body)
		return true
	})
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckpointListJSONWithoutCollection$")
	cmd.Env = append(os.Environ(), "TINKER_TEST_LIST_CHILD=1", "GODEBUG=gctrace=1", "GOGC=")
	out, err := cmd.CombinedOutput()
	if n := len(f.api()); err != nil || n != 10 {
		t.Fatalf("%v, %d requests: %s", err, n, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "gc ") {
			t.Fatalf("the listing ran a collection: %s", line)
		}
	}
}
