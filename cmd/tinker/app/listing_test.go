package app

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
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
