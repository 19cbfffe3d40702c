package tinkerapi

import (
	"fmt"
	"math/rand"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// checkPackRoundTrip packs cps and checks that every entry comes back
// with the same fields (times as the same instant), and the ID as the
// path's tail in memory wherever it is its tail in value.
func checkPackRoundTrip(t *testing.T, cps []Checkpoint) {
	t.Helper()
	p := CheckpointPack{b: appendPack(nil, cps), n: len(cps)}
	i := 0
	for c := range p.All() {
		w := &cps[i]
		if c.CheckpointID != w.CheckpointID || c.CheckpointType != w.CheckpointType || c.TinkerPath != w.TinkerPath ||
			c.TrainingRunID != w.TrainingRunID || c.Public != w.Public || !c.Time.Equal(w.Time) ||
			(c.SizeBytes == nil) != (w.SizeBytes == nil) || (c.SizeBytes != nil && *c.SizeBytes != *w.SizeBytes) ||
			(c.ExpiresAt == nil) != (w.ExpiresAt == nil) || (c.ExpiresAt != nil && !c.ExpiresAt.Equal(*w.ExpiresAt)) {
			t.Fatalf("entry %d: packed and read back as %+v, want %+v", i, *c, *w)
		}
		if c.Time.Location() != time.UTC || (c.ExpiresAt != nil && c.ExpiresAt.Location() != time.UTC) {
			t.Fatalf("entry %d: times come back in %v, want UTC", i, c.Time.Location())
		}
		tail := c.CheckpointID != "" && strings.HasSuffix(c.TinkerPath, c.CheckpointID)
		if tail && unsafe.StringData(c.CheckpointID) != unsafe.StringData(c.TinkerPath[len(c.TinkerPath)-len(c.CheckpointID):]) {
			t.Fatalf("entry %d: ID %q is the path's tail in value but not in memory", i, c.CheckpointID)
		}
		i++
	}
	if i != len(cps) {
		t.Fatalf("read back %d entries, packed %d", i, len(cps))
	}
}

// TestCheckpointPackRoundTrip: entries of every kind, paths sharing
// prefixes or not, long strings (varints over one byte), times before
// 1970, in other zones, and far apart.
func TestCheckpointPackRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	east := time.FixedZone("east", 3*3600)
	long := strings.Repeat("x", 300)
	paths := []string{"", "tinker://r:train:0/weights/0001", "tinker://r:train:0/weights/0002", "tinker://r:train:0/sampler_weights/final",
		"tinker://s:train:1/weights/0001", "tinker://r:train:0/" + long, "é ünï 日本 🙂", "tinker://r"}
	ids := []string{"", "weights/0001", "final", "other", long, "0"}
	types := []string{"training", "sampler", "", "other"}
	var cps []Checkpoint
	for i := range 2000 {
		c := Checkpoint{
			TinkerPath:     paths[r.Intn(len(paths))],
			CheckpointID:   ids[r.Intn(len(ids))],
			CheckpointType: types[r.Intn(len(types))],
			Time:           time.Unix(r.Int63n(1<<40)-(1<<39), r.Int63n(1e9)*int64(r.Intn(2))),
			Public:         r.Intn(2) == 0,
		}
		if i%3 == 0 {
			c.Time = c.Time.In(east)
		}
		if i%4 == 0 && c.TinkerPath != "" {
			c.CheckpointID = c.TinkerPath[r.Intn(len(c.TinkerPath)):]
		}
		if i%5 == 0 {
			c.TrainingRunID = paths[r.Intn(len(paths))]
		}
		if i%2 == 0 {
			n := r.Int63() >> uint(r.Intn(63))
			if i%6 == 0 {
				n = -n
			}
			c.SizeBytes = &n
		}
		if i%7 < 3 {
			e := time.Unix(r.Int63n(1<<40)-(1<<39), r.Int63n(1e9)).In(east)
			c.ExpiresAt = &e
		}
		cps = append(cps, c)
	}
	extremes := []time.Time{time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Unix(0, 0)}
	for _, ts := range extremes {
		cps = append(cps, Checkpoint{TinkerPath: "p", Time: ts, ExpiresAt: &extremes[0]})
	}
	checkPackRoundTrip(t, cps)
	checkPackRoundTrip(t, nil)
	// Stopping early stops.
	p := CheckpointPack{b: appendPack(nil, cps), n: len(cps)}
	n := 0
	for range p.All() {
		if n++; n == 3 {
			break
		}
	}
	if n != 3 {
		t.Errorf("iteration went on to %d after a break at 3", n)
	}
}

func TestCommonPrefix(t *testing.T) {
	for _, c := range []struct {
		a, b string
		n    int
	}{
		{"", "", 0}, {"a", "", 0}, {"abc", "abd", 2}, {"abcdefgh", "abcdefgh", 8}, {"abcdefghij", "abcdefghiX", 9},
		{"abcdefgXij", "abcdefghij", 7}, {"tinker://r:train:0/weights/0001", "tinker://r:train:0/weights/0002", 30},
		{"short", "shorter and longer", 5},
	} {
		if got := commonPrefix(c.a, c.b); got != c.n {
			t.Errorf("commonPrefix(%q, %q) = %d, want %d", c.a, c.b, got, c.n)
		}
	}
}

// TestPackedPagesStayIntact: pages packed one after another from the
// reused body buffers over loopback each read back as their own page.
func TestPackedPagesStayIntact(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int) bool {
		if r.URL.Path != "/api/v1/checkpoints" {
			return false
		}
		var p int
		fmt.Sscan(r.URL.Query().Get("offset"), &p)
		writeJSON(w, 200, detachPage(p/51))
		return true
	})
	c, _ := testClient(t, f)
	var packs []CheckpointPack
	for p := range 3 {
		pack, cursor, err := c.ListUserCheckpointsPacked(ctxT(t), 51, 51*p)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := decodeCheckpoints([]byte(detachPage(p)), nil)
		if !reflect.DeepEqual(cursor, want.Cursor) {
			t.Errorf("page %d: cursor %+v, want %+v", p, cursor, want.Cursor)
		}
		packs = append(packs, pack)
	}
	for p, pack := range packs {
		want, _ := decodeCheckpoints([]byte(detachPage(p)), nil)
		i := 0
		for g := range pack.All() {
			if i >= len(want.Checkpoints) {
				t.Fatalf("page %d: more entries than the %d sent", p, len(want.Checkpoints))
			}
			w := &want.Checkpoints[i]
			if g.CheckpointID != w.CheckpointID || g.TinkerPath != w.TinkerPath || g.CheckpointType != w.CheckpointType ||
				!g.Time.Equal(w.Time) || !reflect.DeepEqual(g.SizeBytes, w.SizeBytes) || g.Public != w.Public {
				t.Errorf("page %d entry %d changed once later pages were read: %+v, want %+v", p, i, *g, *w)
			}
			i++
		}
		if i != len(want.Checkpoints) {
			t.Errorf("page %d: %d entries, want %d", p, i, len(want.Checkpoints))
		}
	}
}
