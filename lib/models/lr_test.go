package models

import (
	"math"
	"strings"
	"testing"
)

func TestLoRALearningRate(t *testing.T) {
	cases := []struct {
		model string
		want  float64
	}{
		// 5e-4 × (2000/hidden)^e, computed by hand from the published rule.
		{"meta-llama/Llama-3.1-8B", 5e-4 * math.Pow(2000.0/4096, 0.781)},
		{"meta-llama/Llama-3.2-1B", 5e-4 * math.Pow(2000.0/2048, 0.781)},
		{"Qwen/Qwen3-8B", 5e-4 * math.Pow(2000.0/4096, 0.0775)},
		// The tiny models take Llama's exponent, whatever their family.
		{TinyLlama, 5e-4 * math.Pow(2000.0/64, 0.781)},
		{TinyQwen3, 5e-4 * math.Pow(2000.0/128, 0.781)},
	}
	for _, c := range cases {
		got, err := LoRALearningRate(c.model)
		if err != nil {
			t.Fatalf("%s: %v", c.model, err)
		}
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: got %g, want %g", c.model, got, c.want)
		}
	}
	// Llama 3.1 8B: 5e-4 × 0.48828^0.781 ≈ 2.86e-4, the figure people quote.
	if got, _ := LoRALearningRate("meta-llama/Llama-3.1-8B"); math.Abs(got-2.86e-4) > 0.01e-4 {
		t.Errorf("Llama-3.1-8B: got %.4g, want about 2.86e-4", got)
	}
	if _, err := LoRALearningRate("openai/gpt-oss-20b"); err == nil || !strings.Contains(err.Error(), "calibrated") {
		t.Errorf("gpt-oss: want a no-calibrated-rule error, got %v", err)
	}
	if _, err := LoRALearningRate("tinker-local/tiny-lama"); err == nil || err.Error() != "unknown base model tinker-local/tiny-lama; did you mean tinker-local/tiny-llama?" {
		t.Errorf("a typo: want the nearest name suggested, got %v", err)
	}
	if _, err := LoRALearningRate("nobody/unknown"); err == nil || !strings.Contains(err.Error(), "learning_rate") {
		t.Errorf("unknown model: want an error naming learning_rate, got %v", err)
	}
}

// cookbookLR is tinker-cookbook's get_lr (hyperparam_utils.py, LoRA) as
// written there, independently of LoRALearningRate: the exponent is picked
// by name ("llama" 0.781, "qwen" 0.0775), every other model is refused.
func cookbookLR(name string, hidden int) (float64, bool) {
	low := strings.ToLower(name)
	var e float64
	switch {
	case strings.Contains(low, "llama"):
		e = 0.781
	case strings.Contains(low, "qwen"):
		e = 0.0775
	default:
		return 0, false
	}
	return 5e-5 * 10 * math.Pow(2000/float64(hidden), e), true
}

// Every catalog model (but the tiny ones, see TestLoRALearningRate) gets
// the cookbook's rate, or is refused in one line where the cookbook has
// no calibrated rule (GPT-OSS, DeepSeek V3.1, Kimi K2).
func TestLearningRateFollowsCookbook(t *testing.T) {
	refused := 0
	for _, name := range Names() {
		a, _ := Lookup(name)
		if IsTiny(name) {
			continue
		}
		got, err := LoRALearningRate(name)
		want, ok := cookbookLR(name, a.Hidden)
		switch {
		case ok && (err != nil || math.Abs(got-want) > 1e-15):
			t.Errorf("%s: %g %v, cookbook %g", name, got, err, want)
		case !ok && (err == nil || !strings.Contains(err.Error(), "not yet for "+name) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s: %g %v, want a one-line refusal naming it", name, got, err)
		case !ok:
			refused++
		}
	}
	if refused < 7 {
		t.Errorf("only %d catalog models refused: GPT-OSS, DeepSeek and Kimi lack a calibrated rule", refused)
	}
}
