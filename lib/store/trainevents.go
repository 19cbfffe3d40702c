package store

import (
	"fmt"
	"time"
)

// MaxTrainEvents is how many training events a run keeps; older ones are
// dropped in batches (the console draws at most a few thousand points per
// curve, and a step is one or a few events).
const MaxTrainEvents = 16384

// pruneEvery is how often a run's old events are dropped: at its first
// event since the store was opened and every pruneEvery-th after, so the
// delete's cost is spread thin and a run never holds more than
// MaxTrainEvents+pruneEvery-1 events.
const pruneEvery = 512

// TrainEvent is one finished training operation of a run.
type TrainEvent struct {
	Op                     string // "forward_backward", "forward" or "optim_step"
	Step                   int64  // the optimizer step count after it
	LossSum, Weight        float64
	LearningRate, GradNorm float64
	At                     time.Time
}

// RunTrainEvent is a training event and the run it belongs to.
type RunTrainEvent struct {
	RunID string
	TrainEvent
}

// AddTrainEvents appends training events in one transaction (one sync to
// disk for the lot) and, now and then, drops a run's events beyond its
// newest MaxTrainEvents.
func (s *Store) AddTrainEvents(evs []RunTrainEvent) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("record training events: %w", err)
	}
	defer tx.Rollback()
	for _, e := range evs {
		if _, err := tx.Exec(`INSERT INTO train_events(run_id, op, step, loss_sum, weight, lr, grad_norm, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			e.RunID, e.Op, e.Step, e.LossSum, e.Weight, e.LearningRate, e.GradNorm, micros(e.At)); err != nil {
			return fmt.Errorf("record training events: %w", err)
		}
		if !s.prunesNow(e.RunID) {
			continue
		}
		if _, err := tx.Exec(`DELETE FROM train_events WHERE run_id = ? AND id <= (SELECT id FROM train_events WHERE run_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
			e.RunID, e.RunID, MaxTrainEvents); err != nil {
			return fmt.Errorf("prune training events: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record training events: %w", err)
	}
	return nil
}

// prunesNow counts one more event of runID and says whether its old
// events are to be dropped now (the caller holds writeMu).
func (s *Store) prunesNow(runID string) bool {
	if s.trainAdded == nil {
		s.trainAdded = map[string]int{}
	}
	n := s.trainAdded[runID]
	s.trainAdded[runID] = n + 1
	return n%pruneEvery == 0
}

// TrainEvents returns runID's kept training events, oldest first.
func (s *Store) TrainEvents(runID string) ([]TrainEvent, error) {
	rows, err := s.db.Query(`SELECT op, step, loss_sum, weight, lr, grad_norm, at FROM train_events WHERE run_id = ? ORDER BY id`, runID)
	if err != nil {
		return nil, fmt.Errorf("read training events: %w", err)
	}
	defer rows.Close()
	var out []TrainEvent
	for rows.Next() {
		var e TrainEvent
		var at int64
		if err := rows.Scan(&e.Op, &e.Step, &e.LossSum, &e.Weight, &e.LearningRate, &e.GradNorm, &at); err != nil {
			return nil, fmt.Errorf("read training events: %w", err)
		}
		e.At = fromMicros(at)
		out = append(out, e)
	}
	return out, rows.Err()
}
