package engine

import (
	"fmt"
	"math"
)

// AdamParams are optim_step's hyperparameters.
type AdamParams struct {
	LearningRate float64
	Beta1        float64
	Beta2        float64
	Eps          float64
	WeightDecay  float64 // decoupled: p ← p − lr·wd·p
	GradClipNorm float64 // > 0: clip the global gradient norm to this first
}

// DefaultAdamParams are the wire defaults.
func DefaultAdamParams() AdamParams {
	return AdamParams{LearningRate: 1e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-12}
}

// Validate reports a hyperparameter out of range.
func (p AdamParams) Validate() error {
	ok := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }
	switch {
	case !ok(p.LearningRate):
		return fmt.Errorf("adam_params: learning_rate must be a finite number >= 0, got %v", p.LearningRate)
	case !ok(p.Beta1) || p.Beta1 >= 1:
		return fmt.Errorf("adam_params: beta1 must be in [0, 1), got %v", p.Beta1)
	case !ok(p.Beta2) || p.Beta2 >= 1:
		return fmt.Errorf("adam_params: beta2 must be in [0, 1), got %v", p.Beta2)
	case !ok(p.Eps):
		return fmt.Errorf("adam_params: eps must be a finite number >= 0, got %v", p.Eps)
	case !ok(p.WeightDecay):
		return fmt.Errorf("adam_params: weight_decay must be a finite number >= 0, got %v", p.WeightDecay)
	case !ok(p.GradClipNorm):
		return fmt.Errorf("adam_params: grad_clip_norm must be a finite number >= 0, got %v", p.GradClipNorm)
	}
	return nil
}

// OptimStep applies the accumulated gradients with AdamW, as
// torch.optim.AdamW (bias-corrected moments, decoupled weight decay) after
// torch.nn.utils.clip_grad_norm_ when GradClipNorm > 0: the gradients are
// multiplied by clip/(norm + 1e-6) when that is below 1. It then zeroes
// the gradients. The metrics hold the global L2 norm of the gradients
// before clipping.
//
// Per element the update is computed in float64 from the float32 value,
// gradient and moments, and stored back in float32 (adamUpdate). The
// squared norm adds each parameter's sumSquares in parameter order.
func (t *Trainer) OptimStep(p AdamParams) (map[string]float64, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	norm := math.Sqrt(gradSquares(t.params))
	coef := 1.0
	if c := p.GradClipNorm / (norm + 1e-6); p.GradClipNorm > 0 && c < 1 {
		coef = c
	}
	t.step++
	n := float64(t.step)
	stepSize := p.LearningRate / (1 - math.Pow(p.Beta1, n))
	bc2 := math.Sqrt(1 - math.Pow(p.Beta2, n))
	decay := 1 - float64(p.LearningRate*p.WeightDecay)
	a := adamConsts{coef: coef, b1: p.Beta1, b2: p.Beta2, decay: decay, stepSize: stepSize, bc2: bc2, eps: p.Eps}
	adamStep(t.params, a)
	t.syncScaled()
	return map[string]float64{"unclipped_grad_l2:mean": norm}, nil
}

// Step is the number of optimizer steps taken.
func (t *Trainer) Step() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.step
}

// adamCost is an AdamW update's cost in multiply-adds, for parallelFor
// (a square root and two divisions among some ten operations).
const adamCost = 16

// gradSquares is Σ sumSquares(q.grad) added in parameter order; the
// parameters' sums run on all cores (each whole on one, so the bits do
// not depend on the split).
func gradSquares(params []*param) float64 {
	ss := make([]float64, len(params))
	var n int
	for _, q := range params {
		n += len(q.grad)
	}
	parallelFor(len(params), 1, n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			ss[i] = sumSquares(params[i].grad)
		}
	})
	var sum float64
	for _, s := range ss {
		sum += s
	}
	return sum
}

// adamStep applies adamUpdate to every parameter and zeroes its
// gradient, each large parameter split over the cores by element ranges
// (the update is per element, so the bits do not depend on the split).
func adamStep(params []*param, a adamConsts) {
	for _, q := range params {
		parallelFor(len(q.grad), 64, len(q.grad)*adamCost, func(lo, hi int) {
			adamUpdate(q.w[lo:hi], q.m[lo:hi], q.v[lo:hi], q.grad[lo:hi], a)
			clear(q.grad[lo:hi])
		})
	}
}
