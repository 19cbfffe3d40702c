package models

import (
	"fmt"
	"math"

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

// lrExponents are the fitted exponents; families without one have no
// calibrated rule.
var lrExponents = map[Family]float64{
	Llama3:   0.781,
	Qwen3:    0.0775,
	Qwen3MoE: 0.0775,
}

// LoRALearningRate is the published rule's learning rate for a LoRA on
// the named base model.
func LoRALearningRate(baseModel string) (float64, error) {
	a, ok := Lookup(baseModel)
	if !ok {
		if near := suggest.Nearest(baseModel, Names()); near != "" {
			// The words sample() and the training loops use for a typo.
			return 0, fmt.Errorf("unknown base model %s; did you mean %s?", baseModel, near)
		}
		return 0, fmt.Errorf("no architecture known for %s: pass learning_rate explicitly", baseModel)
	}
	e, ok := lrExponents[a.Family]
	if IsTiny(a.Name) {
		// The rule was fitted on real models; on the tiny local ones
		// Qwen's exponent gives tiny-qwen3 a tenth of tiny-llama's rate
		// and it barely learns. Llama's exponent over their hidden sizes
		// makes both learn in a few epochs (docs/training.md).
		e, ok = lrExponents[Llama3], true
	}
	if !ok {
		return 0, fmt.Errorf("the learning-rate rule is calibrated for Llama and Qwen only, not %s (%s): pass learning_rate explicitly", a.Name, a.Family)
	}
	if a.Hidden <= 0 {
		return 0, fmt.Errorf("%s has no hidden size: pass learning_rate explicitly", a.Name)
	}
	return lrBase * lrLoRAMultiplier * math.Pow(float64(lrRefHidden)/float64(a.Hidden), e), nil
}
