package server

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/store"
)

// cleanupOrphans tidies the checkpoint directories a crash left: it
// finishes replacements a killed save left halfway (atomicfile.FinishSwaps:
// the only copy of a checkpoint is never removed), removes temporary
// directories no live writer holds, and removes the files of checkpoints
// whose rows were deleted (rows go first, files second) just before the
// process died. A run directory that a writer holds (an import or a save
// in another process, holding it with atomicfile.ShareDir) is left alone.
func (s *Server) cleanupOrphans() int {
	root := filepath.Join(s.opts.DataDir, "checkpoints")
	runs, err := os.ReadDir(root)
	if err != nil {
		return 0
	}
	removed := 0
	for _, r := range runs {
		runID, err := url.PathUnescape(r.Name())
		if err != nil || !r.IsDir() {
			continue
		}
		lock, err := atomicfile.ExclusiveDir(filepath.Join(root, r.Name()))
		if err != nil || lock == nil {
			continue // in use
		}
		for _, kind := range []string{"weights", "sampler_weights"} {
			removed += s.cleanupKind(filepath.Join(root, r.Name(), kind), runID, kind)
		}
		lock.Close()
	}
	return removed
}

// cleanupKind is cleanupOrphans for one directory of a run's checkpoints.
func (s *Server) cleanupKind(dir, runID, kind string) int {
	if n, err := atomicfile.FinishAllSwaps(dir); err != nil {
		s.opts.Logf("finish an interrupted checkpoint write: %v", err)
	} else if n > 0 {
		s.opts.Logf("finished %d checkpoint write(s) a crash interrupted in %s", n, dir)
	}
	removed, _ := atomicfile.SweepStale(dir, ".")
	entries, _ := os.ReadDir(dir)
	now := s.now()
	for _, e := range entries {
		name, err := url.PathUnescape(e.Name())
		if err != nil || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if _, ok := s.st.Checkpoint(runID, kind, name, now); !ok && os.RemoveAll(filepath.Join(dir, e.Name())) == nil {
			removed++
		}
	}
	return removed
}

// holdRunDir creates the run's checkpoint directory and holds it shared
// (atomicfile.ShareDir) while files are written whose rows do not exist
// yet, so that a server starting meanwhile does not take them for orphans.
func holdRunDir(dataDir, runID string) (*os.File, error) {
	dir := checkpointPath(dataDir, runID, "", "")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create checkpoint directory: %w", err)
	}
	return atomicfile.ShareDir(dir)
}

func (s *Server) sweepLoop() {
	defer close(s.sweepDone)
	t := time.NewTicker(s.opts.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stopSweep:
			return
		case <-t.C:
			if n, err := s.Sweep(); err != nil {
				s.opts.Logf("sweep: %v", err)
			} else if n > 0 {
				s.opts.Logf("sweep: deleted %d expired checkpoint(s)", n)
			}
		}
	}
}

// Sweep deletes every expired checkpoint (rows and files) now, and the
// generated checkpoint files that have been idle for an hour.
func (s *Server) Sweep() (int, error) {
	s.archives.dropIdle(s.now())
	s.trainers.pruneSnapshots(time.Now())
	n := 0
	for _, c := range s.st.ExpiredCheckpoints(s.now()) {
		if err := s.deleteCheckpoint(c.RunID, c.Kind, c.Name); err != nil && !errors.Is(err, store.ErrNotFound) {
			return n, err
		}
		n++
	}
	return n, nil
}
