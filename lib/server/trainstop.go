package server

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Stopping with training in flight (Close).
//
// A model's operations either run in seq_id order or do not run at all:
// never a later one after an earlier one was dropped. At Close the server
// stops accepting operations and lets every model's queue run out: an
// operation whose earlier seq_ids are accepted runs, one waiting for a
// seq_id that never came does not, and neither does anything after it.
// After Options.ShutdownGrace whatever has not run is halted the same way
// (a running forward pass is cancelled, which leaves the gradients as they
// were). With KeepTrainers the snapshot records the model's position as
// the last operation that ran, the futures of the operations that ran keep
// their results across the restart (futurekeep.go), and those of halted
// operations answer 410, so the client resubmits them under the same
// seq_ids, which the restarted server accepts.

// errHalted fails an operation that did not run because the server
// stopped.
var errHalted = userError{"the local server stopped before this operation ran; resubmit it (same seq_id) once the server is back"}

// drain stops new operations and waits, for at most grace, until every
// accepted operation of every model finished; then it halts the rest and
// waits for them to end.
func (ts *trainers) drain(grace time.Duration) {
	ts.mu.Lock()
	if ts.stopping.Load() {
		ts.mu.Unlock()
		return
	}
	ts.stopping.Store(true)
	close(ts.stop)
	ids := make([]string, 0, len(ts.models))
	for id := range ts.models {
		ids = append(ids, id)
	}
	ts.mu.Unlock()
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	told := false
	for _, id := range ids {
		m := ts.model(id)
		for {
			m.mu.Lock()
			busy, ch := len(m.running) > 0, m.changed
			m.mu.Unlock()
			if !busy {
				break
			}
			if !told && grace > 0 {
				ts.logf("stopping: letting the queued training operations run (at most %v; a second signal stops at once)", grace)
				told = true
			}
			select {
			case <-ch:
			case <-deadline.C:
				ts.haltAll()
			}
		}
	}
	ts.haltAll()
}

// haltAll halts every operation that has not started and cancels the
// running passes.
func (ts *trainers) haltAll() {
	ts.haltOnce.Do(func() {
		close(ts.halt)
		ts.cancel()
	})
}

// refuseStopping answers an operation that arrives while the server stops.
func (ts *trainers) refuseStopping() *errorResponse {
	if ts.stopping.Load() {
		return errorf(http.StatusServiceUnavailable, "The local server is stopping; retry once it is back")
	}
	return nil
}

// haltLocked records that seq did not run, so neither does anything after
// it, and the model's position stays before it; the caller holds m.mu.
func (m *modelState) haltLocked(seq int) {
	if m.halted == 0 || seq < m.halted {
		m.halted = seq
	}
}

// position is the last seq_id whose operation ran (or was given up on
// for a gap); the caller holds m.mu.
func (m *modelState) position() int {
	if m.halted > 0 {
		return min(m.done, m.halted-1)
	}
	return m.done
}

// halted reports whether an operation that failed with err was cut short
// by the stop (its effects were not applied).
func (ts *trainers) cutShort(err error) bool {
	select {
	case <-ts.halt:
		return errors.Is(err, context.Canceled)
	default:
		return false
	}
}
