package server

import (
	"fmt"
	"math"

	"github.com/tinkershell/tinker/lib/engine"
)

// Results holding NaN or ±Inf. JSON has no literal for them (encoding/json
// refuses to write one), and a model whose loss or weights overflowed gives
// nothing a client can use anyway, so such an operation fails with a user
// error naming the value instead of answering an empty result. The
// protobuf form could carry them, but both forms of a future agree.

// nonFiniteError is the failure of op on a model once value went
// non-finite.
func nonFiniteError(op, runID, value string) error {
	return userErrorf("%s on %s: %s is not a finite number (the loss, gradients or weights overflowed: "+
		"very large loss weights or adam_params do this); load the last saved state (load_state) and continue with smaller values", op, runID, value)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// firstNonFinite32 is the index of the first NaN or ±Inf in xs, or -1.
func firstNonFinite32(xs []float32) int {
	for i, x := range xs {
		if !finite(float64(x)) {
			return i
		}
	}
	return -1
}

// checkFwdResult names the first non-finite value of a forward result.
func checkFwdResult(op, runID string, res *engine.ForwardResult) error {
	if !finite(res.LossSum) {
		return nonFiniteError(op, runID, fmt.Sprintf("the loss (%v)", res.LossSum))
	}
	for i, o := range res.Outputs {
		if j := firstNonFinite32(o.Logprobs); j >= 0 {
			return nonFiniteError(op, runID, fmt.Sprintf("loss_fn_outputs[%d].logprobs[%d] (%v)", i, j, o.Logprobs[j]))
		}
		if j := firstNonFinite32(o.ElementwiseLoss); j >= 0 {
			return nonFiniteError(op, runID, fmt.Sprintf("loss_fn_outputs[%d].elementwise_loss[%d] (%v): a loss weight times its log-probability overflowed float32", i, j, o.ElementwiseLoss[j]))
		}
	}
	return nil
}

// checkMetrics names the first non-finite metric.
func checkMetrics(op, runID string, metrics map[string]float64) error {
	for _, k := range sortedNames(metrics) {
		if !finite(metrics[k]) {
			return nonFiniteError(op, runID, fmt.Sprintf("metric %s (%v)", k, metrics[k]))
		}
	}
	return nil
}

// hugeInput is where a loss input is large enough to overflow float32
// gradients once multiplied through the model: no real reward or weight
// comes near it.
const hugeInput = 1e15

// inputPeak is the loss input of largest magnitude sent in the
// forward_backward passes since a model's last optim_step.
type inputPeak struct {
	name       string
	datum, pos int
	value      float64
}

// peakOf finds the largest |value| among data's loss inputs other than
// the target tokens.
func peakOf(data []engine.Datum) inputPeak {
	var p inputPeak
	for i, d := range data {
		for _, name := range sortedNames(d.LossFnInputs) {
			if name == engine.InputTargetTokens {
				continue
			}
			for j, v := range d.LossFnInputs[name] {
				if math.Abs(v) > math.Abs(p.value) {
					p = inputPeak{name, i, j, v}
				}
			}
		}
	}
	return p
}

// notePeak keeps the larger of the model's peak and p.
func (m *modelState) notePeak(p inputPeak) {
	for {
		old := m.peak.Load()
		if old != nil && math.Abs(old.value) >= math.Abs(p.value) {
			return
		}
		if m.peak.CompareAndSwap(old, &p) {
			return
		}
	}
}

// nonFiniteStepError is the failure of an optim_step that would have made
// the adapter non-finite; the engine undid it, so the model is as it was.
// When the passes since the last step sent a huge loss input (a reward of
// 3e38), that overflowed the gradients, and the error names it.
func nonFiniteStepError(runID string, nf *engine.NonFiniteError, peak *inputPeak) error {
	if peak != nil && math.Abs(peak.value) >= hugeInput {
		return userErrorf("optim_step on %s: the gradients are not a finite number: the forward_backward since the last step sent %s %.3g "+
			"(datum %d, position %d), too large for float32 training; scale the rewards or weights down (|value| below %g) and send "+
			"the forward_backward again, or load the last saved state (load_state). The step was not applied and the model is as before it",
			runID, peak.name, peak.value, peak.datum, peak.pos, hugeInput)
	}
	return userErrorf("optim_step on %s: %s is not a finite number after this step (very large learning_rate or weight_decay, "+
		"or eps=0, do this); the step was not applied and the model is as before it: retry with smaller adam_params, "+
		"or load the last saved state (load_state)", runID, nf.Tensor+fmt.Sprintf("[%d] (%v)", nf.Index, nf.Value))
}
