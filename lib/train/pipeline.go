package train

import (
	"context"
	"fmt"
	"time"
)

// pipelineDepth is how many steps are in flight at most.
const pipelineDepth = 2

// inflight is a submitted step.
type inflight[M Record] struct {
	step  int
	await func() (M, error)
}

// drive runs the remaining steps, pipelined: the next step is submitted
// before the current one is awaited (at most two in flight), except after
// a barrier, so the service always has the next step queued. On an
// interrupt it saves the last finished step's state.
func (r *runner[M]) drive(ctx context.Context, s stepper[M]) (*Result[M], error) {
	start := r.st.Step
	r.finished, r.resultsAt = start, []time.Time{time.Now()}
	if start > 0 && r.o.OnResume != nil {
		r.o.OnResume(start, r.total)
	}
	var queue []inflight[M]
	next := start
	for {
		open := next < r.total && (r.o.MaxSteps == 0 || next-start < r.o.MaxSteps) && ctx.Err() == nil
		if open && len(queue) < pipelineDepth && (len(queue) == 0 || !r.barrier(s, queue[len(queue)-1].step)) {
			await, err := s.submit(ctx, next)
			if err == nil {
				queue = append(queue, inflight[M]{next, await})
				next++
				continue
			}
			if ctx.Err() == nil {
				return nil, fmt.Errorf("step %d: %w", next+1, err)
			}
			// Interrupted while submitting: the requests a step sends go
			// out whole (with the uncancelled context), so none is lost
			// and no later request waits for it at the server.
			// Interrupted while submitting: finish what was queued.
		}
		if len(queue) == 0 {
			break
		}
		if err := r.finish(queue[0]); err != nil {
			return nil, r.stopped(ctx, err)
		}
		queue = queue[1:]
	}
	return r.end(ctx)
}

// barrier reports whether the step after step must wait for it: a save
// or the loop's own barrier must see its weights.
func (r *runner[M]) barrier(s stepper[M], step int) bool {
	return r.saveAt(step+1) || s.barrier(step)
}

// finish awaits a step, records its metrics and saves where due.
func (r *runner[M]) finish(f inflight[M]) error {
	m, err := f.await()
	if err != nil {
		return err
	}
	n := f.step + 1
	r.res.Steps = append(r.res.Steps, m)
	r.finished = n
	if r.log != nil {
		if err := r.log.record(m); err != nil {
			return fmt.Errorf("log_dir: %w", err)
		}
	}
	if r.o.OnStep != nil {
		r.o.OnStep(m, r.total)
	}
	if r.saveAt(n) {
		if err := r.save(n, n == r.total); err != nil {
			return fmt.Errorf("save after step %d: %w", n, err)
		}
	}
	return nil
}

// end saves the state of the last finished step unless it is saved, and
// words an interrupt.
func (r *runner[M]) end(ctx context.Context) (*Result[M], error) {
	if r.finished == r.total {
		return r.res, nil
	}
	if r.finished > r.st.Step || r.st.StatePath == "" {
		if err := r.save(r.finished, false); err != nil {
			return nil, r.stopped(ctx, fmt.Errorf("save the state of step %d: %w", r.finished, err))
		}
	}
	if ctx.Err() != nil {
		return r.res, r.interrupted()
	}
	return r.res, nil
}

// interrupted is the error of a run stopped by Ctrl-C: the last saved
// state and how to resume from it.
func (r *runner[M]) interrupted() *InterruptedError {
	return &InterruptedError{Step: r.st.Step, Total: r.total, StatePath: r.st.StatePath, LogDir: r.o.LogDir}
}

// stopped is err, or the interrupt that caused it: once ctx is cancelled,
// whatever failed after it (a request cut short) is worded as the
// interrupt, with the last state saved.
func (r *runner[M]) stopped(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return r.interrupted()
	}
	return err
}

// save stores the training state after step (and, at the end, the sampler
// weights) and records it in log_dir/state.json.
func (r *runner[M]) save(step int, final bool) error {
	name := fmt.Sprintf("%s-%06d", r.prefix, step)
	if final {
		name = r.prefix + "-final"
	}
	path, err := r.tc.SaveState(r.wait, name, nil)
	if err != nil {
		return err
	}
	next := State{Step: step, StatePath: path}
	if final {
		if next.SamplerPath, err = r.tc.SaveWeightsForSampler(r.wait, name, nil); err != nil {
			return err
		}
	}
	if r.log != nil {
		if err := r.log.saveState(next); err != nil {
			return fmt.Errorf("log_dir: %w", err)
		}
	}
	// Recorded at once: an interrupt right after this save must not save
	// the same step again (the name would already exist).
	r.st = next
	r.keep.saved(r.wait, path)
	r.res.StatePath, r.res.SamplerPath = next.StatePath, next.SamplerPath
	return nil
}
