package server

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// trainedOverwrite trains a model, saves it as "ck", trains on and saves
// "ck" again with overwrite. It returns the path and both versions of the
// weights file, the server already closed.
func trainedOverwrite(t *testing.T) (e *trainEnv, path string, v1, v2 []byte) {
	e = newTrainEnv(t, Options{})
	ctx := context.Background()
	tc, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, tinkerapi.LoraConfig{Rank: 4, Seed: new(int64(7)), TrainAttn: true, TrainMLP: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := []tinkerapi.Datum{sft("ab", "cd")}
	e.step(tc, data, 1e-2)
	if path, err = tc.SaveState(ctx, "ck", nil); err != nil {
		t.Fatal(err)
	}
	v1 = e.file(path, peft.WeightsFile)
	e.step(tc, data, 1e-2)
	e.result("/api/v1/save_weights", map[string]any{"model_id": tc.ModelID(), "path": "ck", "overwrite": true, "type": "save_weights"})
	v2 = e.file(path, peft.WeightsFile)
	if bytes.Equal(v1, v2) {
		t.Fatal("a training step left the weights as they were")
	}
	e.srv.Close()
	return e, path, v1, v2
}

// reopen starts a server over e's data directory, as after a crash.
func (e *trainEnv) reopen() {
	e.t.Helper()
	s, err := Open(Options{DataDir: e.dir, Now: e.clk.Now, SweepInterval: -1})
	if err != nil {
		e.t.Fatal(err)
	}
	e.restart(s)
}

func archiveRoute(path string) string {
	p, _ := tinkerapi.ParsePath(path)
	return "/api/v1/training_runs/" + p.RunID + "/checkpoints/" + p.Kind + "/" + p.Name + "/archive"
}

// TestCrashedOverwriteKeepsTrainedWeights lays out on disk what a save
// killed between the renames of its directory swap leaves, then starts a
// server: the start-up sweep finishes the swap, and the archive serves
// trained weights, never the seed's.
func TestCrashedOverwriteKeepsTrainedWeights(t *testing.T) {
	cases := []struct {
		name      string
		new, old  string // names of the new copy (v2) and the old copy (v1)
		wantNewer bool
	}{
		// Earlier versions: old copy aside, new one still a temporary.
		{"old aside, new a temporary", ".ck.tmp-123", ".ck.old-123", false},
		// atomicfile.SwapDir's two-step form: the new copy named complete.
		{"old aside, new complete", ".ck.new-0123456789ab", ".ck.old-0123456789ab", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, path, v1, v2 := trainedOverwrite(t)
			p, _ := tinkerapi.ParsePath(path)
			dir := e.srv.checkpointDir(p.RunID, p.Kind, p.Name)
			parent := filepath.Dir(dir)
			if err := os.Rename(dir, filepath.Join(parent, c.new)); err != nil {
				t.Fatal(err)
			}
			mkCheckpointCopy(t, filepath.Join(parent, c.new), filepath.Join(parent, c.old), v1)
			long := time.Now().Add(-time.Hour) // the restart comes later
			for _, n := range []string{c.new, c.old} {
				os.Chtimes(filepath.Join(parent, n), long, long)
			}
			e.reopen()
			if code, b, _ := e.do("GET", archiveRoute(path), nil); code != 302 {
				t.Fatalf("archive = %d %s", code, b)
			}
			want := map[bool][]byte{false: v1, true: v2}[c.wantNewer]
			if got := e.file(path, peft.WeightsFile); !bytes.Equal(got, want) {
				t.Errorf("after the restart the weights are not the trained ones (seed's: %v)", !bytes.Equal(got, v1) && !bytes.Equal(got, v2))
			}
			if left, _ := os.ReadDir(parent); len(left) != 1 {
				t.Errorf("left in %s: %v", parent, left)
			}
		})
	}
}

// mkCheckpointCopy writes a complete checkpoint directory at to: the
// config of the checkpoint at from, weights w, the completion marker.
func mkCheckpointCopy(t *testing.T, from, to string, w []byte) {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(from, peft.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{peft.ConfigFile: cfg, peft.WeightsFile: w, peft.CompleteFile: nil} {
		if err := os.WriteFile(filepath.Join(to, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMissingTrainedFilesAreReported: the files of a trained checkpoint
// are its only copy; when they are gone the server says so rather than
// serving the seed's initialisation under the checkpoint's name.
func TestMissingTrainedFilesAreReported(t *testing.T) {
	e, path, _, _ := trainedOverwrite(t)
	p, _ := tinkerapi.ParsePath(path)
	if err := os.RemoveAll(e.srv.checkpointDir(p.RunID, p.Kind, p.Name)); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	code, b, _ := e.do("GET", archiveRoute(path), nil)
	if code == 302 || !strings.Contains(string(b), "missing") {
		t.Fatalf("archive of a checkpoint without files = %d %s, want an error saying they are missing", code, b)
	}
}

// TestStartDuringImportKeepsItsFiles: an import writes a run's checkpoint
// files before their rows exist. A server starting on the same data
// directory meanwhile leaves them (and the import's locked temporary
// directory) alone; once the import is gone, unrecorded files are orphans.
func TestStartDuringImportKeepsItsFiles(t *testing.T) {
	dir := t.TempDir()
	const run = "import-run:train:0"
	hold, err := holdRunDir(dir, run)
	if err != nil {
		t.Fatal(err)
	}
	done := checkpointPath(dir, run, "weights", "imported")
	if err := os.MkdirAll(done, 0o755); err != nil {
		t.Fatal(err)
	}
	kindDir := filepath.Dir(done)
	td, err := atomicfile.MkdirTemp(kindDir, ".imported.tmp-")
	if err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-time.Hour)
	os.Chtimes(td.Path, long, long)
	start := func() {
		s, err := Open(Options{DataDir: dir, SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	start()
	for _, p := range []string{done, td.Path} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("a server start during the import removed %s", filepath.Base(p))
		}
	}
	hold.Close()
	td.Release()
	start()
	if left, _ := os.ReadDir(kindDir); len(left) != 0 {
		t.Errorf("after the import died its files stay: %v", left)
	}
}

// TestIdleSweepKeepsTrainedOverwrite: files generated from a seed are
// removed when idle (they can be made again); once a trained save has
// overwritten them they are the only copy and stay.
func TestIdleSweepKeepsTrainedOverwrite(t *testing.T) {
	e := newTrainEnv(t, Options{ArchiveSyncLimit: 1})
	ctx := context.Background()
	tc, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, tinkerapi.LoraConfig{Rank: 4, Seed: new(int64(7)), TrainAttn: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	path, err := tc.SaveState(ctx, "ck", nil) // untrained: generated on first use
	if err != nil {
		t.Fatal(err)
	}
	e.do("GET", archiveRoute(path), nil)
	e.srv.archives.wait()
	if code, b, _ := e.do("GET", archiveRoute(path), nil); code != 302 {
		t.Fatalf("archive = %d %s", code, b)
	}
	e.step(tc, []tinkerapi.Datum{sft("ab", "cd")}, 1e-2)
	e.result("/api/v1/save_weights", map[string]any{"model_id": tc.ModelID(), "path": "ck", "overwrite": true, "type": "save_weights"})
	trained := e.file(path, peft.WeightsFile)
	e.clk.Add(2 * time.Hour)
	if _, err := e.srv.Sweep(); err != nil {
		t.Fatal(err)
	}
	if got := e.file(path, peft.WeightsFile); !bytes.Equal(got, trained) {
		t.Error("the trained weights changed after the idle sweep")
	}
}
