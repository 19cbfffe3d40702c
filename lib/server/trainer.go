package server

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/store"
)

// Per-model training state and the order of a model's operations.
//
// Each training run (model) has a modelState: its seq_id queue and, once a
// training operation needed it, an engine.Trainer holding the adapter, the
// accumulated gradients and the AdamW state in memory. A model that never
// trained has no trainer: its weights are the LoRA initialisation from the
// run's seed, which is what lib/peft writes for its checkpoints, and the
// trainer created later starts from exactly those values.
//
// A model's operations (forward, forward_backward, optim_step, the saves,
// load_weights) carry seq_id 1, 2, …; create_model is 0. They run one at a
// time in seq_id order. A request whose seq_id is not above the last one
// accepted is refused. A request waits for the missing lower seq_ids for at
// most SeqGapTimeout, then runs anyway: a client that lost a request must
// not stall its model.
//
// Trainers live in memory, within the training budget: idle ones are
// written to their snapshot when room is needed (trainmemory.go); tinker
// serve keeps them across a clean restart (trainsnapshot.go, trainstop.go).
// So that a crash cannot silently turn a trained model back into its
// initialisation, the first optim_step of a model leaves a
// marker file under DataDir/trainers; a model with a marker and neither a
// trainer nor a snapshot lost its weights, and every training operation and
// save on it fails with a message saying to load the last saved state
// (which removes the marker).

type trainers struct {
	pool       *engine.Pool
	markDir    string // DataDir/trainers: one empty file per model that has stepped
	gapTimeout time.Duration
	budget     int64               // activation bytes of concurrently running passes
	mem        *semaphore.Weighted // of budget bytes
	cpu        chan struct{}       // bounds concurrently running passes
	maxPending int                 // queued training requests of one user before 429
	logf       func(string, ...any)

	// Stopping (trainstop.go): stop closes when Close begins, halt when
	// the operations not yet run are given up; ctx of the running passes
	// is cancelled then.
	stopping atomic.Bool
	stop     chan struct{}
	halt     chan struct{}
	haltOnce sync.Once
	ctx      context.Context
	cancel   context.CancelFunc

	mu            sync.Mutex
	models        map[string]*modelState
	queued        map[string]queueUse // by owner (trainmemory.go)
	queuedBytes   int64
	resident      map[string]*residentTrainer // models whose trainer is in memory
	residentBytes int64
	// Idle trainers written out to disk (evict), by model and per owner,
	// held to snapCap bytes per owner (trainsnapshot.go).
	snapCap   int64
	snapshots map[string]residentTrainer
	snapBytes map[string]int64
}

func newTrainers(o Options) *trainers {
	ts := &trainers{pool: o.Engine, markDir: filepath.Join(o.DataDir, "trainers"), gapTimeout: o.SeqGapTimeout, budget: o.TrainMemory,
		mem: semaphore.NewWeighted(o.TrainMemory), cpu: make(chan struct{}, o.TrainConcurrency),
		maxPending: o.MaxPendingTrain, logf: o.Logf, models: map[string]*modelState{}, queued: map[string]queueUse{},
		resident: map[string]*residentTrainer{}, stop: make(chan struct{}), halt: make(chan struct{}),
		snapCap: o.SnapshotBytesPerUser, snapshots: map[string]residentTrainer{}, snapBytes: map[string]int64{}}
	ts.ctx, ts.cancel = context.WithCancel(context.Background())
	ts.pruneSnapshots(time.Now())
	return ts
}

type modelState struct {
	peak     atomic.Pointer[inputPeak] // largest loss input since the last step (nonfinite.go)
	mu       sync.Mutex
	changed  chan struct{}   // closed and replaced whenever the queue moves
	accepted int             // highest seq_id accepted
	done     int             // every seq_id up to this one has finished (or was given up on)
	running  map[int]bool    // accepted, not finished
	finished map[int]bool    // finished, above done
	tr       *engine.Trainer // nil until the model first trains
	base     string          // tr's base model
	marked   bool            // the marker file of a stepped model exists
	snapshot bool            // a snapshot waits to become tr (trainsnapshot.go)
	halted   int             // the first seq_id halted by a stop, 0 if none (trainstop.go)
	ts       *trainers
}

// errStateLost answers an operation on a model whose trained weights were
// lost when the server restarted.
func errStateLost(runID string) error {
	return userErrorf("model %s lost its trained weights when the local server restarted (only a clean stop of tinker serve keeps them); "+
		"load your last saved state (load_state, or training_client(state=...)) and continue from there", runID)
}

// markStepped records that the model's weights differ from its
// initialisation; the caller holds m.mu.
func (ts *trainers) markStepped(runID string, m *modelState) error {
	if m.marked {
		return nil
	}
	if err := os.MkdirAll(ts.markDir, 0o700); err != nil {
		return fmt.Errorf("record training state: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(ts.markDir, runID), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("record training state: %w", err)
	}
	m.marked = true
	return f.Close()
}

// lost reports whether the model stepped before a restart and has no
// trainer now; the caller holds m.mu.
func (ts *trainers) lost(runID string, m *modelState) bool {
	if m.tr != nil || m.marked || m.snapshot {
		return false
	}
	_, err := os.Stat(filepath.Join(ts.markDir, runID))
	return err == nil
}

// forget drops the lost-weights marker: the model's weights are about to be
// replaced by a checkpoint's.
func (ts *trainers) forget(runID string) {
	m := ts.model(runID)
	m.mu.Lock()
	defer m.mu.Unlock()
	os.Remove(filepath.Join(ts.markDir, runID))
	m.marked = false
	ts.dropSnapshot(runID, m)
}

// stepped is markStepped for callers that do not hold the lock.
func (ts *trainers) stepped(runID string) error {
	m := ts.model(runID)
	m.mu.Lock()
	defer m.mu.Unlock()
	return ts.markStepped(runID, m)
}

func (ts *trainers) model(runID string) *modelState {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	m := ts.models[runID]
	if m == nil {
		m = &modelState{changed: make(chan struct{}), running: map[int]bool{}, finished: map[int]bool{}, ts: ts}
		ts.loadSnapshotSeq(runID, m)
		ts.models[runID] = m
	}
	return m
}

// accept reserves seq for a request on the model; nil seq takes the one
// after the highest accepted (JSON clients that do not number their
// requests). A seq_id that was used, or given up on, is refused; a lower
// one than accepted so far is fine while it is awaited (clients may send
// the chunks of one call concurrently). A request refused after it was
// accepted must still finish its seq_id.
func (m *modelState) accept(runID string, seq *int) (int, *errorResponse) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.ts.refuseStopping(); e != nil {
		return 0, e
	}
	if seq == nil && m.accepted == math.MaxInt {
		return 0, errorf(http.StatusBadRequest, "model %s has used every seq_id up to %d: continue in a new model (save_state, then create one with load_state)", runID, m.accepted)
	}
	n := m.accepted + 1
	if seq != nil {
		n = *seq
	}
	if n <= m.done || m.running[n] || m.finished[n] {
		return 0, errorf(http.StatusBadRequest, "seq_id %d of model %s was used already (operations up to %d have run): each operation takes the next seq_id", n, runID, m.done)
	}
	m.accepted = max(m.accepted, n)
	m.running[n] = true
	return n, nil
}

// finish marks seq finished and lets the operations after it run.
func (m *modelState) finish(seq int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.running, seq)
	m.finished[seq] = true
	for m.finished[m.done+1] {
		delete(m.finished, m.done+1)
		m.done++
	}
	close(m.changed)
	m.changed = make(chan struct{})
}

// inOrder wraps work to run as the model's operation seq: after every
// earlier accepted operation finished, and after the missing seq_ids below
// it arrived, or gapTimeout passed (then they are given up on, and refused
// by accept should they come). Operations of one model never overlap. An
// operation a stop halts does not run, nor does any after it (trainstop.go).
func (ts *trainers) inOrder(runID string, seq int, work func() ([]byte, []byte, error)) func() ([]byte, []byte, error) {
	m := ts.model(runID)
	return func() ([]byte, []byte, error) {
		defer m.finish(seq)
		if !ts.waitTurn(m, seq) {
			return nil, nil, errHalted
		}
		res, pb, err := work()
		if err != nil && ts.cutShort(err) {
			m.mu.Lock()
			m.haltLocked(seq)
			m.mu.Unlock()
			return nil, nil, errHalted
		}
		return res, pb, err
	}
}

// waitTurn waits until seq may run and reports true, or records that a
// stop halted it and reports false.
func (ts *trainers) waitTurn(m *modelState, seq int) bool {
	deadline := time.NewTimer(ts.gapTimeout)
	defer deadline.Stop()
	gapOK := false
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		earlier := false
		for s := range m.running {
			if s < seq {
				earlier = true
				break
			}
		}
		if !earlier && (m.done >= seq-1 || gapOK) {
			break
		}
		// A stop ends a wait for a gap at once, any other wait when it
		// halts what has not run.
		if isClosed(ts.halt) || (!earlier && isClosed(ts.stop)) {
			break
		}
		ch, stop := m.changed, ts.stop
		if isClosed(stop) {
			stop = nil
		}
		m.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			gapOK = true
		case <-stop:
		case <-ts.halt:
		}
		m.mu.Lock()
	}
	if isClosed(ts.halt) || (m.halted > 0 && seq > m.halted) || (m.done < seq-1 && !gapOK) {
		m.haltLocked(seq)
		return false
	}
	m.done = max(m.done, seq-1)
	return true
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// trainer returns the model's trainer, creating it from the run's LoRA
// configuration and seed on first use (loading the base model if needed).
// Its weights change only inside the model's ordered operations.
func (s *Server) trainer(run store.RunView) (*engine.Trainer, error) {
	m := s.trainers.model(run.ID)
	m.mu.Lock()
	defer m.mu.Unlock()
	if tr, err := s.trainedLocked(run, m); tr != nil || err != nil {
		return tr, err
	}
	tr, err := s.newTrainer(run)
	if err != nil {
		return nil, err
	}
	if err := s.trainers.residentLocked(run.ID, run.Owner, run.BaseModel, m, tr); err != nil {
		return nil, err
	}
	return tr, nil
}

// trained returns the model's trainer if its weights may differ from the
// initialisation its seed describes, nil if they cannot, or the error of a
// model whose trained weights were lost.
func (s *Server) trained(run store.RunView) (*engine.Trainer, error) {
	m := s.trainers.model(run.ID)
	m.mu.Lock()
	defer m.mu.Unlock()
	return s.trainedLocked(run, m)
}

func (s *Server) trainedLocked(run store.RunView, m *modelState) (*engine.Trainer, error) {
	switch {
	case m.tr != nil:
		s.trainers.touch(run.ID)
		return m.tr, nil
	case m.snapshot:
		return s.restoreLocked(run, m)
	case s.trainers.lost(run.ID, m):
		return nil, errStateLost(run.ID)
	}
	return nil, nil
}

// newTrainer makes a fresh trainer of the run's adapter.
func (s *Server) newTrainer(run store.RunView) (*engine.Trainer, error) {
	if s.trainers.pool == nil {
		return nil, userErrorf("training is not available: this local server was started without an engine")
	}
	base, err := s.trainers.pool.Model(run.BaseModel)
	if err != nil {
		return nil, userErrorf("cannot train %s on this server: %v", run.BaseModel, err)
	}
	tr, err := engine.NewTrainer(base, engine.LoRAConfig{Rank: run.LoraRank, Alpha: peft.DefaultAlpha,
		TrainAttn: run.TrainAttn, TrainMLP: run.TrainMLP, TrainUnembed: run.TrainUnembed, Seed: run.Seed})
	if err != nil {
		return nil, fmt.Errorf("create trainer for %s: %w", run.ID, err)
	}
	return tr, nil
}

// hasWeights reports whether the model's weights may differ from its
// initialisation (it has a trainer, or a snapshot of one).
func (ts *trainers) hasWeights(runID string) bool {
	m := ts.model(runID)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tr != nil || m.snapshot
}

// checkBudget refuses a pass whose activations could never fit the budget.
func (ts *trainers) checkBudget(need int64) *errorResponse {
	if need > ts.budget {
		return errorf(http.StatusBadRequest, "This request needs about %d MiB of activation memory, over the server's training budget of %d MiB (tinker serve --train-memory): send fewer or shorter datums per request",
			need>>20, ts.budget>>20)
	}
	return nil
}

// run executes a pass with need bytes of activations once memory and a
// CPU slot are free, so concurrent passes of several models stay within
// the budget and leave cores to sampling.
func (ts *trainers) run(ctx context.Context, need int64, pass func() error) error {
	if err := ts.mem.Acquire(ctx, need); err != nil {
		return err
	}
	defer ts.mem.Release(need)
	select {
	case ts.cpu <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-ts.cpu }()
	return pass()
}
