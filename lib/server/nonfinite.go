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

// nonFiniteStepError is the failure of an optim_step that would have made
// the adapter non-finite; the engine undid it, so the model is as it was.
func nonFiniteStepError(runID string, nf *engine.NonFiniteError) error {
	return userErrorf("optim_step on %s: %s is not a finite number after this step (very large learning_rate or weight_decay, "+
		"or eps=0, do this); the step was not applied and the model is as before it: retry with smaller adam_params, "+
		"or load the last saved state (load_state)", runID, nf.Tensor+fmt.Sprintf("[%d] (%v)", nf.Index, nf.Value))
}
