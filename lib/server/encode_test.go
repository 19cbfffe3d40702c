package server

import (
	"encoding/json"
	"math/rand"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/store"
)

func TestAppendTS(t *testing.T) {
	for _, tc := range []struct {
		in   time.Time
		want string
	}{
		{time.Date(2025, 12, 27, 8, 51, 24, 966034123, time.UTC), `"2025-12-27T08:51:24.966034Z"`},
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), `"2026-01-02T02:04:05.000000Z"`},
		{time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC), `"12345-01-01T00:00:00.000000Z"`},
	} {
		if got := string(appendTS(nil, tc.in)); got != tc.want {
			t.Errorf("appendTS(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestAppendTSMatchesFormat: the laid digits equal time.Format's across
// years 0-9999, before 1970 included, and in other zones.
func TestAppendTSMatchesFormat(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	east := time.FixedZone("east", -(9*3600 + 30*60))
	for range 3000 {
		tm := time.Unix(r.Int63n(253402300800+62135596800)-62135596800, r.Int63n(1e9)).In(east)
		want := `"` + tm.UTC().Format("2006-01-02T15:04:05.000000Z") + `"`
		if got := string(appendTS(nil, tm)); got != want {
			t.Fatalf("appendTS(%v) = %s, want %s", tm, got, want)
		}
	}
}

func TestAppendCheckpointIsValidJSON(t *testing.T) {
	exp := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, name := range []string{"final", `we"ird\\`, "tab\there", "é-ü", "\x7f", string([]byte{0xff, 'a'})} {
		c := &store.Checkpoint{RunID: "r:train:0", Kind: "sampler_weights", Name: name, Time: exp, SizeBytes: 12, Public: true, ExpiresAt: &exp}
		var got map[string]any
		if err := json.Unmarshal(appendCheckpoint(nil, c), &got); err != nil {
			t.Fatalf("%q: %v: %s", name, err, appendCheckpoint(nil, c))
		}
		wantName := name
		if name == string([]byte{0xff, 'a'}) {
			wantName = "\ufffda" // invalid UTF-8 is replaced, as encoding/json does
		}
		if got["checkpoint_id"] != "sampler_weights/"+wantName || got["tinker_path"] != "tinker://r:train:0/sampler_weights/"+wantName ||
			got["checkpoint_type"] != "sampler" || got["size_bytes"] != 12.0 || got["public"] != true || got["expires_at"] != "2026-01-01T00:00:00.000000Z" {
			t.Errorf("%q: %v", name, got)
		}
	}
}
