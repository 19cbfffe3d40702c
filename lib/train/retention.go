package train

import (
	"context"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// DefaultKeepStates is how many of a run's saved training states are
// kept (the newest ones); the final state and sampler weights always
// stay. A run that saves every 20 steps otherwise leaves a checkpoint per
// 20 steps behind, hundreds in an hour of trying things.
const DefaultKeepStates = 2

// retention deletes what a run no longer needs as it saves: training
// states beyond the newest keep (keep 0 keeps all), and, for RL, each
// policy snapshot once the next exists.
type retention struct {
	rest   *tinkerapi.Client // nil: nothing is deleted (a test client)
	keep   int
	states []string // the run's states, oldest first, the saved one last
}

// saved records a new state and deletes the oldest beyond keep. The
// state.json that names the new one is written by then, so a resume
// never needs a deleted one. Deletion is best effort: a failure leaves a
// checkpoint behind, never stops training.
func (rt *retention) saved(ctx context.Context, path string) {
	rt.states = append(rt.states, path)
	for rt.keep > 0 && len(rt.states) > rt.keep {
		rt.remove(ctx, rt.states[0])
		rt.states = rt.states[1:]
	}
}

// replaced deletes a superseded snapshot (RL's policy of the step
// before), unless the run keeps everything.
func (rt *retention) replaced(ctx context.Context, old string) {
	if rt.keep > 0 && old != "" {
		rt.remove(ctx, old)
	}
}

func (rt *retention) remove(ctx context.Context, path string) {
	p, err := tinkerapi.ParsePath(path)
	if rt.rest == nil || err != nil {
		return
	}
	_ = rt.rest.DeleteCheckpoint(ctx, p.RunID, p.CheckpointID)
}
