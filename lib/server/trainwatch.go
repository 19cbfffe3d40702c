package server

import (
	"time"

	"github.com/tinkershell/tinker/lib/engine"
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

// notifyTrain passes ev to Options.OnTrain, if set.
func (s *Server) notifyTrain(ev TrainEvent) {
	if s.opts.OnTrain != nil {
		ev.At = s.now()
		s.opts.OnTrain(ev)
	}
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
