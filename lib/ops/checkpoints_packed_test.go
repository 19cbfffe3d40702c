package ops

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// TestListCheckpointsPackedSameAsListCheckpoints: the packed listing
// holds the entries ListCheckpoints returns, in its order, whatever the
// server does with its pages: a limit below the total, a page longer
// than asked for, a total it overstates, a page ignoring the limit, no
// cursor at all.
func TestListCheckpointsPackedSameAsListCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		name         string
		have, claims int // entries the server holds, and its total_count (-1: no cursor)
		limit        int
		long         int // offset of a page served 200 entries longer (-1: none)
		ignoreLimit  bool
	}{
		{"all", 2500, 2500, 0, -1, false},
		{"limit", 2500, 2500, 1500, -1, false},
		{"long page", 3000, 3000, 0, 1000, false},
		{"overstated total", 2500, 4200, 0, -1, false},
		{"ignores limit", 1200, 1200, 5, -1, true},
		{"no cursor", 700, -1, 0, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/v1/checkpoints" {
					http.NotFound(w, r)
					return
				}
				limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
				off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
				if tc.ignoreLimit {
					limit = 1000
				}
				end := off + limit
				if off == tc.long {
					end += 200
				}
				var b strings.Builder
				b.WriteString(`{"checkpoints":[`)
				for i := off; i < min(end, tc.have); i++ {
					if i > off {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, `{"checkpoint_id":"weights/%05d","checkpoint_type":"training","time":"2026-11-29T10:%02d:00.000000Z","tinker_path":"tinker://run-%d:train:0/weights/%05d","size_bytes":%d,"public":false,"expires_at":null}`,
						i, i%60, i/100, i, i*7)
				}
				b.WriteString(`]`)
				if tc.claims >= 0 {
					fmt.Fprintf(&b, `,"cursor":{"offset":%d,"limit":%d,"total_count":%d}`, off, limit, tc.claims)
				}
				b.WriteString(`}`)
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(b.String()))
			}))
			defer srv.Close()
			c, err := tinkerapi.New(tinkerapi.Config{BaseURL: srv.URL, APIKey: "tml-test"})
			if err != nil {
				t.Fatal(err)
			}
			want, _, err := ListCheckpoints(context.Background(), c, "", tc.limit, nil)
			if err != nil {
				t.Fatal(err)
			}
			seq, err := ListCheckpointsPacked(context.Background(), c, "", tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			i := 0
			for got := range seq {
				if i >= len(want) {
					t.Fatalf("more than the %d entries ListCheckpoints gives", len(want))
				}
				if w := want[i]; got.CheckpointID != w.CheckpointID || got.TinkerPath != w.TinkerPath || !got.Time.Equal(w.Time) || *got.SizeBytes != *w.SizeBytes {
					t.Fatalf("entry %d is %+v, want %+v", i, *got, w)
				}
				i++
			}
			if i != len(want) {
				t.Fatalf("%d entries, ListCheckpoints gives %d", i, len(want))
			}
		})
	}
}
