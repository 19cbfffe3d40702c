package server

import (
	"time"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/store"
)

// TrainEvent is one finished training operation, passed to
// Options.OnTrain so that a watcher (the web console, lib/console) can draw
// training curves without a route of its own in the API.
type TrainEvent struct {
	Owner string // the run's owner URN
	RunID string
	Op    string // "forward_backward", "forward" or "optim_step"
	// Step is the model's optimizer step count after the operation.
	Step int64
	// LossSum and Weight (forward ops): the summed loss and the summed
	// weights of the tokens it counts, so LossSum/Weight is the mean loss.
	LossSum, Weight float64
	// LearningRate and GradNorm (optim_step): the step's Adam learning
	// rate and the gradient's L2 norm before clipping.
	LearningRate, GradNorm float64
	At                     time.Time
}

// notifyTrain records ev for TrainHistory (so the console's curves
// outlive a restart) and then passes it to Options.OnTrain, if set. The
// order is relied on: a watcher that loads a run's history on its first
// event finds that event in it already.
func (s *Server) notifyTrain(ev TrainEvent) {
	ev.At = s.now()
	s.trainLog.add(store.RunTrainEvent{RunID: ev.RunID, TrainEvent: store.TrainEvent{Op: ev.Op, Step: ev.Step, LossSum: ev.LossSum,
		Weight: ev.Weight, LearningRate: ev.LearningRate, GradNorm: ev.GradNorm, At: ev.At}})
	if s.opts.OnTrain != nil {
		s.opts.OnTrain(ev)
	}
}

// TrainHistory returns the recorded training events of runID if owner
// owns it (nil for anyone else, or an unknown run), oldest first.
func (s *Server) TrainHistory(runID, owner string) []TrainEvent {
	run, ok := s.st.Run(runID, s.now())
	if !ok || run.Owner != owner {
		return nil
	}
	evs, err := s.trainLog.history(runID)
	if err != nil {
		s.opts.Logf("training curves: %v", err)
		return nil
	}
	out := make([]TrainEvent, len(evs))
	for i, e := range evs {
		out[i] = TrainEvent{Owner: owner, RunID: runID, Op: e.Op, Step: e.Step, LossSum: e.LossSum, Weight: e.Weight,
			LearningRate: e.LearningRate, GradNorm: e.GradNorm, At: e.At}
	}
	return out
}

// lossWeight is the total weight a forward pass's loss counts: the sum of
// the datums' weights, or one per target where a datum has none.
func lossWeight(data []engine.Datum) float64 {
	w := 0.0
	for _, d := range data {
		ws, ok := d.LossFnInputs[engine.InputWeights]
		if !ok {
			w += float64(len(d.LossFnInputs[engine.InputTargetTokens]))
			continue
		}
		for _, x := range ws {
			w += x
		}
	}
	return w
}
