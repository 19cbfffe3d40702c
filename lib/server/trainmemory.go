package server

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
)

// Training memory (Options.TrainMemory, tinker serve --train-memory).
// Three things grow with what clients send; each is held to the budget:
//
//   - the activations of running passes: trainers.run waits for them;
//   - queued forward/forward_backward requests: their datums are counted
//     per user. A user may have maxPending requests and half the budget
//     queued, all users together the budget. A request waiting for a
//     missing seq_id counts against its own user only, so nobody's gap
//     stalls another user's training;
//   - trainers (adapter, gradients, AdamW moments: engine StateBytes).
//     Those in memory stay within the budget, and one user has at most
//     maxResidentPerUser of them. Beyond either, the least recently used
//     idle trainer is written to its snapshot (trainsnapshot.go) and
//     dropped; its model's next operation restores it unchanged.

// maxResidentPerUser bounds the models one user has training in memory at
// once; more are written out while idle.
const maxResidentPerUser = 8

type queueUse struct {
	n     int
	bytes int64
}

type residentTrainer struct {
	owner string
	bytes int64
	used  time.Time
}

// datumBytes estimates the memory a queued request's datums hold.
func datumBytes(data []engine.Datum) int64 {
	var n int64
	for _, d := range data {
		n += 64 + 8*int64(len(d.ModelInput))
		for _, v := range d.LossFnInputs {
			n += 32 + 8*int64(len(v))
		}
	}
	return n
}

// admit counts a queued training request of owner holding bytes, or
// answers 429 (the client backs off and resubmits) when owner, or all
// users together, have too much queued. With nothing queued anywhere a
// request is always admitted, so one that fits the activation budget can
// always run.
func (ts *trainers) admit(owner string, bytes int64) *errorResponse {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	u := ts.queued[owner]
	switch {
	case u.n >= ts.maxPending:
		return errorf(http.StatusTooManyRequests, "Training is busy: you have %d training requests queued (the limit is %d per user); collect their results, then retry", u.n, ts.maxPending)
	case u.n > 0 && u.bytes+bytes > ts.budget/2:
		return errorf(http.StatusTooManyRequests, "Training is busy: your queued training requests hold %s (the limit is half of --train-memory, %s); collect their results, then retry", mib(u.bytes), mib(ts.budget/2))
	case ts.queuedBytes > 0 && ts.queuedBytes+bytes > ts.budget:
		return errorf(http.StatusTooManyRequests, "Training is busy: queued training requests hold %s of the server's %s (--train-memory); retry shortly", mib(ts.queuedBytes), mib(ts.budget))
	}
	ts.queued[owner] = queueUse{u.n + 1, u.bytes + bytes}
	ts.queuedBytes += bytes
	return nil
}

// release ends a request counted by admit.
func (ts *trainers) release(owner string, bytes int64) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	u := ts.queued[owner]
	if u.n <= 1 {
		delete(ts.queued, owner)
	} else {
		ts.queued[owner] = queueUse{u.n - 1, u.bytes - bytes}
	}
	ts.queuedBytes -= bytes
}

// trainMemoryFull answers an operation whose trainer finds no room: every
// trainer in memory is busy. Not a userError: the request is fine, and
// load_weights must not take it for an untrainable base model.
type trainMemoryFull struct{ msg string }

func (e trainMemoryFull) Error() string { return e.msg }

// residentLocked makes tr the model's trainer in memory, writing out idle
// ones to make room; the caller holds m.mu. On an error tr is not kept.
func (ts *trainers) residentLocked(runID, owner, base string, m *modelState, tr *engine.Trainer) error {
	need := tr.StateBytes()
	if need > ts.budget {
		return userErrorf("the training state of %s (adapter, gradients and optimizer moments) needs %s, over the server's training budget of %s (tinker serve --train-memory): use a lower LoRA rank, or raise --train-memory",
			runID, mib(need), mib(ts.budget))
	}
	if err := ts.makeRoom(runID, owner, need); err != nil {
		return err
	}
	m.tr, m.base = tr, base
	return nil
}

// makeRoom reserves need bytes for runID's trainer, evicting the least
// recently used idle trainers: owner's own first while owner is at
// maxResidentPerUser, then anyone's while the budget is exceeded.
func (ts *trainers) makeRoom(runID, owner string, need int64) error {
	for {
		ts.mu.Lock()
		mine := 0
		for _, r := range ts.resident {
			if r.owner == owner {
				mine++
			}
		}
		var victims []string
		if mine >= maxResidentPerUser {
			victims = ts.lruLocked(runID, owner)
		} else if ts.residentBytes+need > ts.budget {
			victims = ts.lruLocked(runID, "")
		} else {
			ts.resident[runID] = &residentTrainer{owner: owner, bytes: need, used: time.Now()}
			ts.residentBytes += need
			ts.mu.Unlock()
			return nil
		}
		ts.mu.Unlock()
		if !slices.ContainsFunc(victims, ts.evict) {
			if used := ts.snapshotUse(owner); mine >= maxResidentPerUser && used > 0 {
				return trainMemoryFull{fmt.Sprintf("you have %d models training in memory and %s of idle ones written to disk, the most one user may keep (%s; tinker serve --help): save_state of the models you are done with and stop using them, then retry", mine, mib(used), mib(ts.snapCap))}
			}
			if mine >= maxResidentPerUser {
				return trainMemoryFull{fmt.Sprintf("you have %d models training at once, the most one user may have in memory: wait until one of them has no operation queued, then retry", mine)}
			}
			return trainMemoryFull{fmt.Sprintf("training memory is full (%s of trainers, all busy; tinker serve --train-memory): retry shortly", mib(ts.residentBytes))}
		}
	}
}

// lruLocked lists the models in memory other than runID (of owner, if
// set), least recently used first; the caller holds ts.mu.
func (ts *trainers) lruLocked(runID, owner string) []string {
	var ids []string
	for id, r := range ts.resident {
		if id != runID && (owner == "" || r.owner == owner) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return ts.resident[a].used.Compare(ts.resident[b].used) })
	return ids
}

// evict writes an idle model's trainer to its snapshot and drops it. A
// model with an operation accepted is not idle: the operation may hold its
// trainer. Models locked by someone else are skipped, so two models making
// room cannot wait for each other.
func (ts *trainers) evict(runID string) bool {
	m := ts.model(runID)
	if !m.mu.TryLock() {
		return false
	}
	defer m.mu.Unlock()
	if m.tr == nil || len(m.running) > 0 {
		return false
	}
	if !ts.snapshotRoom(runID, m.tr.StateBytes()) {
		return false
	}
	// Memory is not bought with the last of the disk the database needs.
	if free, ok := freeBytes(filepath.Dir(ts.markDir)); ok && free < uint64(m.tr.StateBytes()+minFreeBytes) {
		ts.logf("not writing out the idle trainer of %s: the disk is nearly full", runID)
		return false
	}
	if err := ts.writeSnapshotLocked(runID, m); err != nil {
		ts.logf("write out the idle trainer of %s: %v", runID, err)
		return false
	}
	size := m.tr.StateBytes()
	m.tr, m.snapshot = nil, true
	ts.dropResident(runID, size)
	return true
}

// dropResident forgets a trainer no longer in memory; snapshotBytes > 0
// counts the snapshot it was written to against its owner's disk cap.
func (ts *trainers) dropResident(runID string, snapshotBytes int64) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if r := ts.resident[runID]; r != nil {
		ts.residentBytes -= r.bytes
		delete(ts.resident, runID)
		if snapshotBytes > 0 {
			ts.snapshots[runID] = residentTrainer{owner: r.owner, bytes: snapshotBytes, used: time.Now()}
			ts.snapBytes[r.owner] += snapshotBytes
		}
	}
}

// touch marks the model's trainer used now, for the eviction order.
func (ts *trainers) touch(runID string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if r := ts.resident[runID]; r != nil {
		r.used = time.Now()
	}
}

// mib formats a byte count in MiB with one decimal.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// refuse ends an accepted request that was refused. Clients send a 429
// again with the same seq_id, so it leaves the seq_id free (a later
// operation waits for it as for any gap); other refusals use it up.
func (m *modelState) refuse(seq int, e *errorResponse) {
	if e.status != http.StatusTooManyRequests {
		m.finish(seq)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.running, seq)
	if m.accepted == seq {
		m.accepted = m.done
		for _, set := range []map[int]bool{m.running, m.finished} {
			for s := range set {
				m.accepted = max(m.accepted, s)
			}
		}
	}
	close(m.changed)
	m.changed = make(chan struct{})
}

// useUpSeq uses up the seq_id of a training request refused (with e) while
// its body was decoded, once model_id and seq_id could be read from it: the
// client numbers its next request seq_id+1, which must not wait out the gap
// timeout. A request of a model the owner cannot see, or without a seq_id,
// leaves nothing to use up; a 429 leaves the seq_id free for the retry.
func (s *Server) useUpSeq(owner, modelID string, seq *int, e *errorResponse) {
	if seq == nil || e.status == http.StatusTooManyRequests {
		return
	}
	run, release, ae := s.admitOwned(owner, modelID)
	if ae != nil {
		return
	}
	defer release()
	m := s.trainers.model(run.ID)
	if n, ae := m.accept(run.ID, seq); ae == nil {
		m.refuse(n, e)
	}
}
