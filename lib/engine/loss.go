package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Loss functions of forward and forward_backward. Each is a SUM over the
// positions of every datum of a per-position term that depends on the
// model's log-probability of the target token, lp = log softmax(logits)[t]:
//
//	cross_entropy        −w·lp                          (w = weights, default 1)
//	importance_sampling  −A·r,  r = exp(lp − q)         (q = sampling logprobs, A = advantages)
//	ppo                  −min(r·A, clamp(r, lo, hi)·A)  (lo 0.8, hi 1.2)
//	cispo                −sg(clamp(r, lo, hi))·A·lp      (lo 0, hi 4; sg = no gradient)
//	dro                  −(lp·A − ½·β·(lp − q)²)         (β required)
//
// Every term's gradient flows only through lp, so the backward pass needs
// one coefficient per position, dLoss/dlp.

// Loss names.
const (
	LossCrossEntropy       = "cross_entropy"
	LossImportanceSampling = "importance_sampling"
	LossPPO                = "ppo"
	LossCISPO              = "cispo"
	LossDRO                = "dro"
)

// Names of loss_fn_inputs tensors.
const (
	InputTargetTokens = "target_tokens"
	InputWeights      = "weights"
	InputLogprobs     = "logprobs"
	InputAdvantages   = "advantages"
)

// Loss is a validated loss function with its configuration.
type Loss struct {
	Name     string
	lo, hi   float64 // clip thresholds (ppo, cispo)
	beta     float64 // dro
	required []string
	optional []string
}

// LossNames lists the supported loss functions.
func LossNames() []string {
	return []string{LossCrossEntropy, LossImportanceSampling, LossPPO, LossCISPO, LossDRO}
}

// NewLoss validates a loss name and its loss_fn_config (nil or empty for
// none). Unknown keys are an error naming the key.
func NewLoss(name string, config map[string]float64) (Loss, error) {
	l := Loss{Name: name, required: []string{InputTargetTokens, InputLogprobs, InputAdvantages}}
	var keys []string
	switch name {
	case LossCrossEntropy:
		l.required, l.optional = []string{InputTargetTokens}, []string{InputWeights}
	case LossImportanceSampling:
	case LossPPO:
		l.lo, l.hi = 0.8, 1.2
		keys = []string{"clip_low_threshold", "clip_high_threshold"}
	case LossCISPO:
		l.lo, l.hi = 0, 4
		keys = []string{"clip_low_threshold", "clip_high_threshold"}
	case LossDRO:
		keys = []string{"beta"}
		if _, ok := config["beta"]; !ok {
			return Loss{}, fmt.Errorf("loss_fn_config: dro needs beta")
		}
	default:
		return Loss{}, fmt.Errorf("unknown loss_fn %q (supported: %s)", name, strings.Join(LossNames(), ", "))
	}
	for _, k := range sortedKeys(config) {
		v := config[k]
		if !slices.Contains(keys, k) {
			if len(keys) == 0 {
				return Loss{}, fmt.Errorf("loss_fn_config: unknown key %q (%s takes no configuration)", k, name)
			}
			return Loss{}, fmt.Errorf("loss_fn_config: unknown key %q for %s (allowed: %s)", k, name, strings.Join(keys, ", "))
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Loss{}, fmt.Errorf("loss_fn_config: %s must be a finite number, got %v", k, v)
		}
		switch k {
		case "clip_low_threshold":
			l.lo = v
		case "clip_high_threshold":
			l.hi = v
		case "beta":
			l.beta = v
		}
	}
	if l.lo > l.hi {
		return Loss{}, fmt.Errorf("loss_fn_config: clip_low_threshold %v exceeds clip_high_threshold %v", l.lo, l.hi)
	}
	return l, nil
}

// term returns the loss of one position and its derivative with respect to
// lp, given the datum's inputs at that position.
func (l Loss) term(lp float64, in posInputs) (loss, dlp float64) {
	switch l.Name {
	case LossCrossEntropy:
		return -in.weight * lp, -in.weight
	case LossDRO:
		d := lp - in.logprob
		// Products are rounded before the sums so they are never fused.
		return -(float64(lp*in.adv) - float64(0.5*l.beta*d*d)), -(in.adv - float64(l.beta*d))
	}
	r := math.Exp(lp - in.logprob)
	switch l.Name {
	case LossImportanceSampling:
		return -r * in.adv, -r * in.adv
	case LossPPO:
		// The gradient goes through the smaller term; the clamped one has
		// none outside [lo, hi], and on a tie inside both terms agree.
		un, cl := r*in.adv, min(max(r, l.lo), l.hi)*in.adv
		if un <= cl {
			return -un, -r * in.adv
		}
		return -cl, 0
	default: // cispo
		c := min(max(r, l.lo), l.hi)
		return -c * in.adv * lp, -c * in.adv
	}
}

// posInputs are one position's loss inputs.
type posInputs struct {
	weight, logprob, adv float64
}

// Datum is one training example: the model input tokens and the
// loss_fn_inputs tensors by name, each as long as ModelInput (position i
// predicts target_tokens[i]). Token ids are carried as float64, which holds
// every int64 id a vocabulary can have exactly.
type Datum struct {
	ModelInput   []int
	LossFnInputs map[string][]float64
}

// InputError is a problem with one datum of a request; the server answers
// it with a 400.
type InputError struct {
	Datum int    // index in the request
	Field string // e.g. "model_input" or "loss_fn_inputs.weights"
	Msg   string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("datum %d: %s: %s", e.Datum, e.Field, e.Msg)
}

// checkData validates a request's data for loss l on model config c.
func checkData(c Config, l Loss, data []Datum) error {
	if len(data) == 0 {
		return fmt.Errorf("no data: give at least one datum")
	}
	for i, d := range data {
		bad := func(field, format string, args ...any) error {
			return &InputError{Datum: i, Field: field, Msg: fmt.Sprintf(format, args...)}
		}
		n := len(d.ModelInput)
		if n == 0 {
			return bad("model_input", "is empty")
		}
		if mp := c.MaxPositionEmbeddings; mp > 0 && n > mp {
			return bad("model_input", "%d tokens exceed the model's context of %d", n, mp)
		}
		for p, t := range d.ModelInput {
			if t < 0 || t >= c.VocabSize {
				return bad("model_input", "token %d at position %d is outside the vocabulary (0..%d)", t, p, c.VocabSize-1)
			}
		}
		for _, k := range sortedKeys(d.LossFnInputs) {
			if !slices.Contains(l.required, k) && !slices.Contains(l.optional, k) {
				return bad("loss_fn_inputs."+k, "is not an input of %s (it takes %s)", l.Name, strings.Join(append(slices.Clone(l.required), l.optional...), ", "))
			}
			v := d.LossFnInputs[k]
			if len(v) != n {
				return bad("loss_fn_inputs."+k, "has %d values but model_input has %d tokens", len(v), n)
			}
			for p, x := range v {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return bad("loss_fn_inputs."+k, "value %v at position %d is not finite", x, p)
				}
				if k == InputTargetTokens && (x != math.Trunc(x) || x < 0 || x >= float64(c.VocabSize)) {
					return bad("loss_fn_inputs."+k, "token %v at position %d is outside the vocabulary (0..%d)", x, p, c.VocabSize-1)
				}
			}
		}
		for _, k := range l.required {
			if _, ok := d.LossFnInputs[k]; !ok {
				return bad("loss_fn_inputs."+k, "is missing (%s needs %s)", l.Name, strings.Join(l.required, ", "))
			}
		}
	}
	return nil
}

// at returns position p's loss inputs of a validated datum.
func (d *Datum) at(p int) posInputs {
	in := posInputs{weight: 1}
	if w, ok := d.LossFnInputs[InputWeights]; ok {
		in.weight = w[p]
	}
	if q, ok := d.LossFnInputs[InputLogprobs]; ok {
		in.logprob = q[p]
	}
	if a, ok := d.LossFnInputs[InputAdvantages]; ok {
		in.adv = a[p]
	}
	return in
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
