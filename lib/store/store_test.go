package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var t0 = time.Date(2026, 7, 13, 5, 0, 0, 0, time.UTC)

func seed(t *testing.T, s *Store) {
	t.Helper()
	if err := s.CreateSession(Session{ID: "sess", Owner: "u1", CreatedAt: t0, LastHeartbeat: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(Run{ID: "sess:train:0", SessionID: "sess", Owner: "u1", BaseModel: "Qwen/Qwen3-8B", IsLora: true,
		LoraRank: 8, TrainAttn: true, CreatedAt: t0, LastRequestTime: t0, UserMetadata: map[string]string{"a": "b"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		kind := "weights"
		if i%2 == 1 {
			kind = "sampler_weights"
		}
		c := Checkpoint{RunID: "sess:train:0", Kind: kind, Name: fmt.Sprintf("%04d", i), Owner: "u1", Time: t0.Add(time.Duration(i) * time.Minute), SizeBytes: 100}
		if err := s.PutCheckpoint(c, false, t0); err != nil {
			t.Fatal(err)
		}
	}
}

func names(s *Store, owner string, now time.Time, limit, offset int) (string, int) {
	var out string
	n := s.ListCheckpoints(owner, now, limit, offset, func(c *Checkpoint) { out += c.Name + " " })
	return out, n
}

func TestPersistAndReload(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s)
	if got, n := names(s, "u1", t0, 2, 1); got != "0003 0002 " || n != 5 {
		t.Errorf("page = %q total %d", got, n)
	}
	err = s.PutCheckpoint(Checkpoint{RunID: "sess:train:0", Kind: "weights", Name: "0000", Owner: "u1", Time: t0}, false, t0)
	if !errors.Is(err, ErrExists) {
		t.Errorf("duplicate save: %v", err)
	}
	if err := s.SetPublic("sess:train:0", "weights", "0002", true, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPublic("sess:train:0", "weights", "0002", true, t0); !errors.Is(err, ErrExists) {
		t.Errorf("second publish: %v", err)
	}
	exp := t0.Add(time.Hour)
	if err := s.SetExpiry("sess:train:0", "sampler_weights", "0003", &exp, t0); err != nil {
		t.Fatal(err)
	}
	secret := string(s.Secret())
	s.Close()

	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if string(s.Secret()) != secret {
		t.Error("secret changed on reopen")
	}
	v, ok := s.Run("sess:train:0", t0)
	if !ok || v.LastCheckpoint.Name != "0004" || v.LastSamplerCheckpoint.Name != "0003" || v.UserMetadata["a"] != "b" {
		t.Fatalf("run view = %+v", v)
	}
	c, _ := s.Checkpoint("sess:train:0", "weights", "0002", t0)
	if !c.Public {
		t.Error("publish not persisted")
	}
	// After expiry the checkpoint disappears from every read.
	later := t0.Add(2 * time.Hour)
	if got, n := names(s, "u1", later, 10, 0); got != "0004 0002 0001 0000 " || n != 4 {
		t.Errorf("after expiry: %q %d", got, n)
	}
	v, _ = s.Run("sess:train:0", later)
	if v.LastSamplerCheckpoint.Name != "0001" {
		t.Errorf("last sampler after expiry = %s", v.LastSamplerCheckpoint.Name)
	}
	if ex := s.ExpiredCheckpoints(later); len(ex) != 1 || ex[0].Name != "0003" {
		t.Errorf("expired = %v", ex)
	}
	if err := s.DeleteCheckpoint("sess:train:0", "sampler_weights", "0003"); err != nil {
		t.Fatal(err)
	}
	if _, n := names(s, "u1", t0, 10, 0); n != 4 {
		t.Errorf("after delete total %d", n)
	}
	runs, total := s.ListRuns("u2", true, t0, 10, 0)
	if total != 1 || runs[0].ID != "sess:train:0" {
		t.Errorf("accessible runs for u2 = %v %d", runs, total)
	}
	if _, total := s.ListRuns("u2", false, t0, 10, 0); total != 0 {
		t.Errorf("owned runs for u2 = %d", total)
	}
}

func TestImport(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Import(t0, func(im *Importer) error {
		im.AddUser("u1", "h")
		im.AddSession(Session{ID: "s", Owner: "u1", CreatedAt: t0})
		if err := im.AddRun(Run{ID: "s:train:0", SessionID: "s", Owner: "u1", BaseModel: "m", CreatedAt: t0}); err != nil {
			return err
		}
		for i := 0; i < 100; i++ {
			if err := im.AddCheckpoint(Checkpoint{RunID: "s:train:0", Kind: "weights", Name: fmt.Sprint(i), Owner: "u1", Time: t0.Add(time.Duration(i) * time.Second)}); err != nil {
				return err
			}
		}
		return im.AddCheckpoint(Checkpoint{RunID: "nope", Kind: "weights", Name: "x"})
	})
	if err == nil {
		t.Fatal("bad checkpoint should fail the import")
	}
	if _, n := names(s, "u1", t0, 1, 0); n != 0 {
		t.Fatalf("failed import left %d checkpoints", n)
	}
	if _, ok := s.Run("s:train:0", t0); ok {
		t.Fatal("failed import left a run")
	}
}

func TestDurabilityPragmas(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mode string
	var sync int
	if err := s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q %v", mode, err)
	}
	if err := s.db.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil || sync != 2 {
		t.Errorf("synchronous = %d (want 2 = FULL) %v", sync, err)
	}
}

// TestSeesOtherProcessesWrites: two stores on one directory stand for two
// tinker processes (a prompt and a script); each sees the other's writes.
func TestSeesOtherProcessesWrites(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	const owner = "tml:organization_user:x"
	if err := a.CreateSession(Session{ID: "s1", Owner: owner, CreatedAt: now, LastHeartbeat: now}); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateRun(Run{ID: "s1:train:0", SessionID: "s1", Owner: owner, BaseModel: "tinker-local/tiny-llama", IsLora: true, LoraRank: 4, CreatedAt: now, LastRequestTime: now}); err != nil {
		t.Fatal(err)
	}
	if err := a.PutCheckpoint(Checkpoint{RunID: "s1:train:0", Kind: "sampler_weights", Name: "final", Owner: owner, Time: now, SizeBytes: 10}, false, now); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if ok() {
				return
			}
		}
		t.Fatalf("the other store never saw %s", what)
	}
	waitFor("the new checkpoint", func() bool {
		_, found := b.Checkpoint("s1:train:0", "sampler_weights", "final", now)
		return found
	})
	if err := b.DeleteCheckpoint("s1:train:0", "sampler_weights", "final"); err != nil {
		t.Fatal(err)
	}
	waitFor("the deletion", func() bool {
		_, found := a.Checkpoint("s1:train:0", "sampler_weights", "final", now)
		return !found
	})
}

func TestPageHugeValues(t *testing.T) {
	list := []int{1, 2, 3}
	const maxInt = int(^uint(0) >> 1)
	for _, c := range []struct {
		limit, offset int
		want          int
	}{{maxInt, 1, 2}, {maxInt, maxInt, 0}, {1, maxInt, 0}, {-1, 0, 3}, {2, 2, 1}, {0, 0, 0}} {
		if got := page(list, c.limit, c.offset); len(got) != c.want {
			t.Errorf("page(limit=%d, offset=%d) has %d items, want %d", c.limit, c.offset, len(got), c.want)
		}
	}
}

func TestDataIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tinker.db"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for p, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "tinker.db"): 0o600, filepath.Join(dir, "tinker.db-wal"): 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %o, want %o", p, fi.Mode().Perm(), want)
		}
	}
}
