package models

import (
	"fmt"
	"math"
	"strings"

	"github.com/tinkershell/tinker/lib/suggest"
)

// The LoRA learning-rate rule Tinker publishes for supervised fine-tuning:
// a base rate, ten times that for LoRA, scaled by how far the model's
// hidden size is from 2000 with an exponent fitted per family
// (docs/training.md, "Learning rates").
const (
	lrBase           = 5e-5
	lrLoRAMultiplier = 10
	lrRefHidden      = 2000
)

// lrExponent gives the fitted exponents; families without one have no
// calibrated rule. tinker-cookbook's get_lr (hyperparam_utils.py) raises
// "not yet calibrated" for GPT-OSS, DeepSeek V3.1, Kimi K2.6, Nemotron 3
// and Inkling, so lr_for refuses them in one line, as it does the other
// DeepSeek-V3 family models the cookbook does not know. A switch, since a
// map literal would be built at every start.
func lrExponent(f Family) (float64, bool) {
	switch f {
	case Llama3:
		return llama3Exponent, true
	case Qwen3, Qwen3MoE:
		return qwen3Exponent, true
	}
	return 0, false
}

const (
	llama3Exponent = 0.781
	qwen3Exponent  = 0.0775
)

// LoRALearningRate is the published rule's learning rate for a LoRA on
// the named base model: a catalog model, or a model of the current lineup
// that the catalog cannot shape (lineup.go), whose hidden size is known.
func LoRALearningRate(baseModel string) (float64, error) {
	if a, ok := Lookup(baseModel); ok {
		e, ok := lrExponent(a.Family)
		if IsTiny(a.Name) {
			// The rule was fitted on real models; on the tiny local ones
			// Qwen's exponent gives tiny-qwen3 a tenth of tiny-llama's
			// rate and it barely learns. Llama's exponent over their
			// hidden sizes makes both learn in a few epochs
			// (docs/training.md).
			e, ok = lrExponent(Llama3)
		}
		return ruleLR(a.Name, string(a.Family), a.Hidden, e, ok)
	}
	if n, m, ok := lookupLineup(baseModel); ok {
		// The cookbook picks the exponent by name; the lineup's Qwen3.5/3.6/3.8
		// models take Qwen's.
		return ruleLR(n, "", m.hidden, qwen3Exponent, strings.HasPrefix(n, "Qwen/"))
	}
	if near := suggest.Nearest(baseModel, Names()); near != "" {
		// The words sample() and the training loops use for a typo.
		return 0, fmt.Errorf("unknown base model %s; did you mean %s?", baseModel, near)
	}
	return 0, fmt.Errorf("no architecture known for %s: pass learning_rate explicitly", baseModel)
}

func ruleLR(name, family string, hidden int, exponent float64, calibrated bool) (float64, error) {
	if !calibrated {
		if family != "" {
			name += " (" + family + ")"
		}
		return 0, fmt.Errorf("the learning-rate rule is calibrated for Llama and Qwen only, not yet for %s (tinker-cookbook's get_lr refuses it too): pass learning_rate explicitly", name)
	}
	if hidden <= 0 {
		return 0, fmt.Errorf("%s has no hidden size: pass learning_rate explicitly", name)
	}
	return lrBase * lrLoRAMultiplier * math.Pow(float64(lrRefHidden)/float64(hidden), exponent), nil
}
