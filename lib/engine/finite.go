package engine

import (
	"fmt"
	"math"
	"slices"
)

// A step whose hyperparameters overflow the adapter (eps=0 where a
// gradient is zero, a huge learning_rate or weight_decay) can leave every
// metric finite while the weights become NaN or ±Inf. OptimStepFinite
// checks the updated state and puts the trainer back as it was before the
// step, so the client gets an error instead of a model that fails later.
// The adapter and its moments are small (LoRA), so the copy is cheap.

// NonFiniteError reports the first parameter value an optimizer step made
// NaN or ±Inf; the step was undone.
type NonFiniteError struct {
	Tensor string // PEFT name, or the moment's: name + " exp_avg" / " exp_avg_sq"
	Index  int
	Value  float32
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("%s[%d] would be %v after the optimizer step", e.Tensor, e.Index, e.Value)
}

// stepState is a copy of what OptimStep changes.
type stepState struct {
	step          int64
	w, m, v, grad [][]float32
}

// OptimStepFinite is OptimStep that refuses a non-finite result: when a
// weight or moment would be NaN or ±Inf it restores the weights, moments,
// accumulated gradients and step count and returns a *NonFiniteError.
// Like every Trainer method it must not overlap another call that changes
// the trainer (the server runs a model's operations one at a time).
func (t *Trainer) OptimStepFinite(p AdamParams) (map[string]float64, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	saved := t.saveStep()
	metrics, err := t.OptimStep(p)
	if err != nil {
		return nil, err
	}
	if bad := t.restoreIfNonFinite(saved); bad != nil {
		return nil, bad
	}
	return metrics, nil
}

func (t *Trainer) saveStep() *stepState {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := &stepState{step: t.step}
	for _, q := range t.params {
		s.w = append(s.w, slices.Clone(q.w))
		s.m = append(s.m, slices.Clone(q.m))
		s.v = append(s.v, slices.Clone(q.v))
		s.grad = append(s.grad, slices.Clone(q.grad))
	}
	return s
}

// restoreIfNonFinite puts s back when the state holds a non-finite value,
// and returns the first such value.
func (t *Trainer) restoreIfNonFinite(s *stepState) *NonFiniteError {
	t.mu.Lock()
	defer t.mu.Unlock()
	bad := t.firstNonFiniteLocked()
	if bad == nil {
		return nil
	}
	t.step = s.step
	for i, q := range t.params {
		copy(q.w, s.w[i])
		copy(q.m, s.m[i])
		copy(q.v, s.v[i])
		copy(q.grad, s.grad[i])
	}
	t.syncScaled()
	return bad
}

func (t *Trainer) firstNonFiniteLocked() *NonFiniteError {
	for _, q := range t.params {
		for _, f := range []struct {
			suffix string
			xs     []float32
		}{{"", q.w}, {" exp_avg", q.m}, {" exp_avg_sq", q.v}} {
			for i, x := range f.xs {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					return &NonFiniteError{Tensor: q.name + f.suffix, Index: i, Value: x}
				}
			}
		}
	}
	return nil
}
