package server

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/store"
)

// Trainers across a restart (Options.KeepTrainers).
//
// At Close, after the running operations finished, every model with a
// trainer is written to DataDir/trainers/<run>.snapshot: adapter, optimizer
// state, pending gradients (engine.WriteSnapshotDir) and where the model's
// seq_ids stand. After a restart the model's queue resumes from that
// position and its next operation restores the trainer, then deletes the
// snapshot, so that a later crash cannot bring back older weights: the
// stepped-model marker then reports them lost, as without snapshots.
// Snapshots nobody came back for are removed after snapshotMaxAge. The
// same snapshot holds an idle trainer written out to make room
// (trainmemory.go) until its model's next operation.

const (
	snapshotSuffix  = ".snapshot"
	snapshotSeqFile = "seq.json"
	snapshotMaxAge  = 7 * 24 * time.Hour
	// defaultSnapshotBytesPerUser is Options.SnapshotBytesPerUser's default.
	defaultSnapshotBytesPerUser = 1 << 30
	snapshotRestored            = "restored the training state of %s from its snapshot"
)

type snapshotSeq struct {
	Done int `json:"seq_done"` // every seq_id up to this one had run
}

func (ts *trainers) snapshotDir(runID string) string {
	return filepath.Join(ts.markDir, runID+snapshotSuffix)
}

// snapshotAll writes a snapshot of every model with a trainer; failures
// are logged, and leave those models to be reported lost after a restart.
func (ts *trainers) snapshotAll(logf func(string, ...any)) {
	ts.mu.Lock()
	ids := make([]string, 0, len(ts.models))
	for id := range ts.models {
		ids = append(ids, id)
	}
	ts.mu.Unlock()
	for _, id := range ids {
		m := ts.model(id)
		m.mu.Lock()
		if m.tr != nil {
			if err := ts.writeSnapshotLocked(id, m); err != nil {
				logf("keep the training state of %s: %v", id, err)
			}
		}
		m.mu.Unlock()
	}
}

// writeSnapshotLocked writes the model's trainer and seq_id position to
// its snapshot; the caller holds m.mu.
func (ts *trainers) writeSnapshotLocked(runID string, m *modelState) error {
	seq, _ := json.Marshal(snapshotSeq{Done: m.position()})
	extra := peft.File{Name: snapshotSeqFile, Write: func(w io.Writer) error { _, err := w.Write(seq); return err }}
	return m.tr.WriteSnapshotDir(ts.snapshotDir(runID), m.base, extra)
}

// loadSnapshotSeq prepares a new modelState from the model's snapshot, if
// it has one: its seq_ids continue where they stood.
func (ts *trainers) loadSnapshotSeq(runID string, m *modelState) {
	b, err := os.ReadFile(filepath.Join(ts.snapshotDir(runID), snapshotSeqFile))
	if err != nil {
		return
	}
	var seq snapshotSeq
	if json.Unmarshal(b, &seq) != nil || seq.Done < 0 {
		return
	}
	m.snapshot = true
	m.accepted, m.done = seq.Done, seq.Done
}

// restoreLocked makes the model's trainer from its snapshot; the caller
// holds m.mu.
func (s *Server) restoreLocked(run store.RunView, m *modelState) (*engine.Trainer, error) {
	dir := s.trainers.snapshotDir(run.ID)
	tr, err := s.newTrainer(run)
	if err == nil {
		err = tr.LoadSnapshotDir(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("restore the training state of %s from its snapshot: %w", run.ID, err)
	}
	if err := s.trainers.residentLocked(run.ID, run.Owner, run.BaseModel, m, tr); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		m.tr = nil
		s.trainers.dropResident(run.ID, 0)
		return nil, fmt.Errorf("restore the training state of %s: %w", run.ID, err)
	}
	s.opts.Logf(snapshotRestored, run.ID)
	m.snapshot = false
	s.trainers.forgetSnapshot(run.ID)
	return tr, nil
}

// dropSnapshot deletes the model's snapshot (its weights are being
// replaced); the caller holds m.mu.
func (ts *trainers) dropSnapshot(runID string, m *modelState) {
	if m.snapshot {
		os.RemoveAll(ts.snapshotDir(runID))
		m.snapshot = false
		ts.forgetSnapshot(runID)
	}
}

// snapshotRoom reports whether writing out runID's idle trainer (about
// size bytes on disk) keeps its owner within SnapshotBytesPerUser: one
// user's idle models would otherwise fill the disk for snapshotMaxAge.
func (ts *trainers) snapshotRoom(runID string, size int64) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	r := ts.resident[runID]
	if r == nil || ts.snapBytes[r.owner]+size <= ts.snapCap {
		return true
	}
	ts.logf("not writing out the idle trainer of %s: its user's idle snapshots would pass %s", runID, mib(ts.snapCap))
	return false
}

// snapshotUse is the disk the owner's written-out idle trainers hold.
func (ts *trainers) snapshotUse(owner string) int64 {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.snapBytes[owner]
}

// forgetSnapshot stops counting runID's snapshot (restored or deleted).
func (ts *trainers) forgetSnapshot(runID string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if sn, ok := ts.snapshots[runID]; ok {
		ts.snapBytes[sn.owner] -= sn.bytes
		if ts.snapBytes[sn.owner] <= 0 {
			delete(ts.snapBytes, sn.owner)
		}
		delete(ts.snapshots, runID)
	}
}

// pruneSnapshots removes snapshots older than snapshotMaxAge, and the
// temporary directories of snapshot writes a kill interrupted (a write in
// progress holds a lock on its own, which keeps it).
func (ts *trainers) pruneSnapshots(now time.Time) {
	entries, _ := os.ReadDir(ts.markDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), snapshotSuffix+".tmp-") {
			atomicfile.SweepStale(ts.markDir, e.Name())
			continue
		}
		if !e.IsDir() || !strings.HasSuffix(e.Name(), snapshotSuffix) {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > snapshotMaxAge {
			os.RemoveAll(filepath.Join(ts.markDir, e.Name()))
		}
	}
}
