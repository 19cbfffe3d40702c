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
