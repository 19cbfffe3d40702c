package server

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tinkershell/tinker/lib/atomicfile"
)

// Futures of model operations across a clean restart (KeepTrainers).
//
// Futures live in memory, but a training script has a forward_backward and
// an optim_step submitted and not yet collected whenever the server may be
// stopped. At Close, after every model's queue ran out (trainstop.go), the
// uncollected futures of operations that ran are written to
// DataDir/trainers/futures.json next to the models' snapshots; the next
// Open reads them back (and deletes the file), so the client's polls of
// the same request ids get the same answers. A future of a halted
// operation answers 410 saying so, and the client resubmits it. A
// crash keeps nothing (as before): kill -9 loses uncollected futures.

const keptFuturesFile = "futures.json"

type keptFuture struct {
	ID      string `json:"id"`
	Owner   string `json:"owner"`
	Model   string `json:"model"`
	Result  []byte `json:"result,omitempty"`
	Proto   []byte `json:"proto,omitempty"`
	Failure []byte `json:"failure,omitempty"`
	Halted  bool   `json:"halted,omitempty"`
}

// keep writes the finished, uncollected futures of model operations to
// path (atomically); the work behind them has ended.
func (t *futureTable) keep(path string) error {
	t.mu.Lock()
	var kept []keptFuture
	for _, f := range t.m {
		if f.model == "" || !f.collectedAt.IsZero() || !isClosed(f.done) {
			continue
		}
		kept = append(kept, keptFuture{f.id, f.owner, f.model, f.result, f.proto, f.failure, f.halted})
	}
	t.mu.Unlock()
	if len(kept) == 0 {
		return nil
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return fmt.Errorf("keep futures: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("keep futures: %w", err)
	}
	err = atomicfile.Write(path, 0o600, func(w io.Writer) error { _, err := w.Write(b); return err })
	if err != nil {
		return fmt.Errorf("keep futures: %w", err)
	}
	return nil
}

// restore registers the futures kept at path as finished, then deletes
// the file; it returns how many there were.
func (t *futureTable) restore(path string) (int, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("read kept futures: %w", err)
	}
	var kept []keptFuture
	if err := json.Unmarshal(b, &kept); err != nil {
		os.Remove(path)
		return 0, fmt.Errorf("read kept futures %s: %w", path, err)
	}
	now := time.Now()
	t.mu.Lock()
	for _, k := range kept {
		if k.ID == "" || t.m[k.ID] != nil {
			continue
		}
		f := &future{id: k.ID, owner: k.Owner, model: k.Model, result: k.Result, proto: k.Proto, failure: k.Failure,
			halted: k.Halted, readyAt: now, createdAt: now, done: make(chan struct{})}
		close(f.done)
		t.m[f.id] = f
		t.byOwner[f.owner] = append(t.byOwner[f.owner], f)
	}
	t.mu.Unlock()
	os.Remove(path)
	os.Remove(path + ".tmp")
	return len(kept), nil
}
