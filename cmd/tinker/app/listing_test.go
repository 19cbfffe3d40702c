package app

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// A page that fails mid-listing leaves stdout empty (nothing half-written
// to a file it is redirected to), the official CLI's error block on stderr
// and a non-zero exit; the same listing whole is valid JSON with every
// checkpoint.
func TestCheckpointListJSONAllOrNothing(t *testing.T) {
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("broken=%v", broken), func(t *testing.T) {
			page := pager(2500, "checkpoints", func(i int) string { return checkpointJSON("run-1", "weights", fmt.Sprintf("%04d", i)) }, false, nil)
			newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Path != "/api/v1/checkpoints" {
					return false
				}
				if broken && r.URL.Query().Get("offset") == "2000" { // the last page: a required field missing
					reply(w, 200, `{"checkpoints": [{"checkpoint_id": "x"}], "cursor": {"offset": 2000, "limit": 500, "total_count": 2500}}`)
					return true
				}
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
			var got struct{ Checkpoints []json.RawMessage }
			if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil || len(got.Checkpoints) != 2500 {
				t.Fatalf("exit %d, %d checkpoints, %v; stderr %s", code, len(got.Checkpoints), err, stderr)
			}
		})
	}
}
