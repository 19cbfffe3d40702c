package tinkerapi

import (
	"bytes"
	"fmt"
	"math/rand"
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
	f := detachPagesFake(t)
	c, _ := testClient(t, f)
	var packs []CheckpointPack
	arena := new(PackArena)
	for p := range 3 {
		pack, cursor, err := c.ListUserCheckpointsPacked(ctxT(t), 51, 51*p, arena)
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

// TestCheckpointPackTwoBack: a run saving weights and sampler weights by
// turns packs each path as the few bytes it does not share with the path
// before last, and reads back.
func TestCheckpointPackTwoBack(t *testing.T) {
	var cps []Checkpoint
	for i := 99; i >= 0; i-- {
		for _, kind := range []string{"sampler_weights", "weights"} {
			id := fmt.Sprintf("%s/%04d", kind, i)
			cps = append(cps, Checkpoint{CheckpointID: id, CheckpointType: "training",
				TinkerPath: "tinker://626ff344-10e1-5eb7-8695-f150eaaae248:train:0/" + id, Time: time.Unix(int64(1e9+i*60), 0)})
		}
	}
	checkPackRoundTrip(t, cps)
	b := appendPack(nil, cps)
	// flags, shared, suffix length, two digits, ID length, run ID, time (2).
	if per := float64(len(b)) / float64(len(cps)); per > 10 {
		t.Errorf("%.1f bytes an entry, want at most 10: paths not packed against the one before last", per)
	}
}

// TestPackArenaChunks: pages packed into an arena whose chunk is too
// small for the next page's reservation (a new chunk), or just fits it,
// and a body the fast reader does not take (decoded, then packed), all
// read back as their own page once every page is packed.
func TestPackArenaChunks(t *testing.T) {
	escaped := strings.Replace(detachPage(2), `"weights/p2-0003"`, `"weights\/p2-0003"`, 1)
	if _, ok := fastCheckpoints([]byte(escaped), nil); ok {
		t.Fatal("the fast reader took an escaped string: the decoded path is not tested")
	}
	bodies := []string{detachPage(0), detachPage(1), escaped, detachPage(3), detachPage(4)}
	for _, first := range []int{0, 100, len(bodies[0]), len(bodies[0]) + len(bodies[1])/2, packChunk} {
		a := &PackArena{buf: make([]byte, 0, first)}
		var packs []CheckpointPack
		for _, body := range bodies {
			pack, cursor, err := a.pack([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := decodeCheckpoints([]byte(body), nil); !reflect.DeepEqual(cursor, want.Cursor) {
				t.Errorf("cursor %+v, want %+v", cursor, want.Cursor)
			}
			packs = append(packs, pack)
		}
		for p, pack := range packs {
			want, _ := decodeCheckpoints([]byte(bodies[p]), nil)
			got := appendPack(nil, want.Checkpoints)
			if !bytes.Equal(pack.b, got) || pack.n != len(want.Checkpoints) {
				t.Errorf("chunk %d, page %d: packed %d entries %x, want %d %x", first, p, pack.n, pack.b, len(want.Checkpoints), got)
			}
		}
	}
}
