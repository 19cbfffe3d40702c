package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
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
// one coefficient per position, dLoss/dlp. cross_entropy also takes K
// targets per position (Datum.Width): each has its own lp and weight, and
// the position's terms are summed.

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
//
// Width is K when cross_entropy's target_tokens (and weights, if given)
// have shape (N, K), K targets per position stored position-major (value
// p·K+k is position p's k-th target), as top-K distillation sends them; 0
// means the usual shape (N,). The outputs take the targets' shape.
type Datum struct {
	ModelInput   []int
	LossFnInputs map[string][]float64
	Width        int
}

// width is the number of targets per position.
func (d *Datum) width() int { return max(d.Width, 1) }

// wide reports whether input k has the targets' (N, K) shape.
func wide(k string) bool { return k == InputTargetTokens || k == InputWeights }

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
		if d.Width < 0 || d.Width > 0 && l.Name != LossCrossEntropy {
			return bad("loss_fn_inputs.target_tokens", "has shape (%d, %d) but %s takes one target per position, shape (%d,); only cross_entropy takes (N, K) targets", n, d.Width, l.Name, n)
		}
		for _, k := range sortedKeys(d.LossFnInputs) {
			if err := checkInput(c, l, d, k); err != nil {
				return bad("loss_fn_inputs."+k, "%s", err)
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

// checkInput validates loss_fn_inputs tensor k of datum d.
func checkInput(c Config, l Loss, d Datum, k string) error {
	if !slices.Contains(l.required, k) && !slices.Contains(l.optional, k) {
		return fmt.Errorf("is not an input of %s (it takes %s)", l.Name, strings.Join(append(slices.Clone(l.required), l.optional...), ", "))
	}
	v, n := d.LossFnInputs[k], len(d.ModelInput)
	switch {
	case wide(k) && d.Width > 0 && len(v) != n*d.Width:
		return fmt.Errorf("has %d values but target_tokens has shape (%d, %d); give %d", len(v), n, d.Width, n*d.Width)
	case (!wide(k) || d.Width == 0) && len(v) != n:
		return fmt.Errorf("has %d values but model_input has %d tokens", len(v), n)
	}
	for j, x := range v {
		p := j / d.width()
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("value %v at position %d is not finite", x, p)
		}
		if k != InputTargetTokens {
			continue
		}
		if x != math.Trunc(x) {
			return fmt.Errorf("value %v at position %d is not an integer: target tokens must be integer token ids", x, p)
		}
		if x < 0 || x >= float64(c.VocabSize) {
			return fmt.Errorf("token %v at position %d is outside the vocabulary (0..%d)", x, p, c.VocabSize-1)
		}
	}
	return nil
}

// rowScorer scores the output layer's logits of one datum a position at a
// time: the logprob of each of the position's targets, the loss terms, and
// for a backward pass the loss's gradient with respect to the logits.
type rowScorer struct {
	l       Loss
	d       *Datum
	out     *DatumOutput
	targets []float64
	width   int // targets per position
}

// newRowScorer prepares out to receive datum d's outputs.
func newRowScorer(l Loss, d *Datum, out *DatumOutput) *rowScorer {
	size := len(d.ModelInput) * d.width()
	out.Width = d.Width
	out.Logprobs = make([]float32, size)
	if l.Name == LossCrossEntropy {
		out.ElementwiseLoss = make([]float32, size)
	}
	return &rowScorer{l: l, d: d, out: out, targets: d.LossFnInputs[InputTargetTokens], width: d.width()}
}

// scoreRows scores the logits rows of positions p0, p0+1, ... on all
// cores (a row over a 150k vocabulary is two passes of exponentials, as
// long as the row's product) and returns each position's loss. Rows are
// independent, so the split changes no bits.
func (s *rowScorer) scoreRows(rows [][]float32, p0 int, backward bool) []float64 {
	losses := make([]float64, len(rows))
	work := len(rows) * len(rows[0]) * 16 // an exponential costs some 16 multiply-adds
	parallelFor(len(rows), 1, work, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			losses[i] = s.score(rows[i], p0+i, backward)
		}
	})
	return losses
}

// score takes position p's logits and returns its loss; with backward it
// overwrites row with dLoss/dlogits. With lp_k = z[t_k] − lse and
// g_k = dLoss/dlp_k, dLoss/dz_v = Σ_k g_k·(1[v = t_k] − softmax_v).
func (s *rowScorer) score(row []float32, p int, backward bool) float64 {
	kw := s.width
	var buf [8]float64 // dLoss/dlp of the position's targets
	gs := buf[:0]
	if kw > len(buf) {
		gs = make([]float64, 0, kw)
	}
	var lse, sum float64
	var e *[]float64
	if backward {
		e = getExpBuf(len(row))
		defer expBufs.Put(e)
		lse, sum = logSumExpKeep(*e, row)
	} else {
		lse = logSumExp(row, 1)
	}
	var total, gsum float64
	for k := range kw {
		j := p*kw + k
		lp := float64(row[int(s.targets[j])]) - lse
		s.out.Logprobs[j] = float32(lp)
		loss, g := s.l.term(lp, s.d.at(j))
		total += loss
		if s.out.ElementwiseLoss != nil {
			s.out.ElementwiseLoss[j] = float32(loss)
		}
		gs = append(gs, g)
		gsum += g
	}
	if backward {
		scaleExps(row, *e, -gsum/sum)
		for k, g := range gs {
			row[int(s.targets[p*kw+k])] += float32(g)
		}
	}
	return total
}

// expBufs holds vocabulary-wide float64 buffers for the backward pass's
// exponentials, kept from the log-sum-exp pass so the gradient does not
// compute them again (1.2 MB at a 150k vocabulary: one per core in use).
var expBufs sync.Pool

func getExpBuf(n int) *[]float64 {
	e, _ := expBufs.Get().(*[]float64)
	if e == nil {
		e = new([]float64)
	}
	*e = slices.Grow((*e)[:0], n)[:n]
	return e
}

// at returns the loss inputs of value j of a validated datum: position j,
// or with (N, K) targets position j/K's k-th target (only cross_entropy,
// whose inputs all have that shape).
func (d *Datum) at(j int) posInputs {
	in := posInputs{weight: 1}
	if w, ok := d.LossFnInputs[InputWeights]; ok {
		in.weight = w[j]
	}
	if q, ok := d.LossFnInputs[InputLogprobs]; ok {
		in.logprob = q[j]
	}
	if a, ok := d.LossFnInputs[InputAdvantages]; ok {
		in.adv = a[j]
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
