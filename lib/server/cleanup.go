package server

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tinkershell/tinker/lib/store"
)

// cleanupOrphans removes checkpoint directories left behind by a crash:
// half-written temporary directories, and files of checkpoints whose rows
// were deleted (rows go first, files second) just before the process died.
func (s *Server) cleanupOrphans() int {
	root := filepath.Join(s.opts.DataDir, "checkpoints")
	runs, err := os.ReadDir(root)
	if err != nil {
		return 0
	}
	now := s.now()
	removed := 0
	for _, r := range runs {
		runID, err := url.PathUnescape(r.Name())
		if err != nil || !r.IsDir() {
			continue
		}
		for _, kind := range []string{"weights", "sampler_weights"} {
			entries, _ := os.ReadDir(filepath.Join(root, r.Name(), kind))
			for _, e := range entries {
				p := filepath.Join(root, r.Name(), kind, e.Name())
				name, err := url.PathUnescape(e.Name())
				orphan := err != nil || strings.HasPrefix(e.Name(), ".")
				if !orphan {
					_, ok := s.st.Checkpoint(runID, kind, name, now)
					orphan = !ok
				}
				if orphan && os.RemoveAll(p) == nil {
					removed++
				}
			}
		}
	}
	return removed
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
