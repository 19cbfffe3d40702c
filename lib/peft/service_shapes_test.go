package peft

import (
	"slices"
	"strings"
	"testing"
)

// cookbookPerRank is tinker-cookbook's table (hyperparam_utils.py) of the
// service's LoRA parameters per unit of rank for the mixture-of-experts
// families: MLP (experts, shared experts, dense layers), attention,
// unembedding.
var cookbookPerRank = map[string][3]int64{
	"Qwen/Qwen3-30B-A3B":                 {14_450_688, 835_584, 153_984},
	"Qwen/Qwen3-235B-A22B-Instruct-2507": {56_598_528, 3_176_448, 156_032},
	"openai/gpt-oss-20b":                 {6_842_880, 497_664, 203_968},
	"openai/gpt-oss-120b":                {40_124_160, 746_496, 203_968},
	"deepseek-ai/DeepSeek-V3.1":          {94_307_328, 2_440_000, 136_448},
	"deepseek-ai/DeepSeek-V3.1-Base":     {94_307_328, 2_440_000, 136_448},
	"moonshotai/Kimi-K2-Thinking":        {144_583_680, 1_940_288, 171_008},
	"moonshotai/Kimi-K2.5":               {144_583_680, 1_940_288, 171_008},
	"moonshotai/Kimi-K2.6":               {144_583_680, 1_940_288, 171_008},
}

// The adapter a plan shapes for Qwen3-MoE, GPT-OSS, DeepSeek V3.1 and Kimi
// K2 (the shared-outer expert form) has exactly the service's parameter count: its tensors' elements, summed per kind and
// divided by the rank, equal the cookbook's counts.
func TestServiceShapesMatchCookbook(t *testing.T) {
	const r = 4
	for name, want := range cookbookPerRank {
		p, err := NewPlan(Config{BaseModel: name, Rank: r, TrainAttn: true, TrainMLP: true, TrainUnembed: true})
		if err != nil {
			t.Fatal(err)
		}
		var got [3]int64
		for _, ti := range p.Layout.Tensors {
			n := int64(1)
			for _, d := range ti.Shape {
				n *= d
			}
			switch {
			case strings.Contains(ti.Name, ".mlp."):
				got[0] += n
			case strings.Contains(ti.Name, ".self_attn."):
				got[1] += n
			default:
				got[2] += n
			}
		}
		for i := range got {
			got[i] /= r
		}
		if got != want {
			t.Errorf("%s: mlp, attn, unembed per rank %v, cookbook %v", name, got, want)
		}
	}
}

// The shared factor is the one on the hidden side: [1, r, hidden] for the
// gate and up projections' lora_A, [1, hidden, r] for the down
// projection's lora_B; the other factor is per expert.
func TestDeepSeekExpertFactors(t *testing.T) {
	p, err := NewPlan(Config{BaseModel: "deepseek-ai/DeepSeek-V3.1", Rank: 2, TrainMLP: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int64{
		"w1.lora_A": {1, 2, 7168}, "w1.lora_B": {256, 2048, 2},
		"w3.lora_A": {1, 2, 7168}, "w3.lora_B": {256, 2048, 2},
		"w2.lora_A": {256, 2, 2048}, "w2.lora_B": {1, 7168, 2},
	}
	seen := 0
	for _, ti := range p.Layout.Tensors {
		rest, ok := strings.CutPrefix(ti.Name, "base_model.model.model.layers.3.mlp.experts.")
		if !ok {
			continue
		}
		seen++
		if w := want[strings.TrimSuffix(rest, ".weight")]; !slices.Equal(ti.Shape, w) {
			t.Errorf("%s: shape %v, want %v", ti.Name, ti.Shape, w)
		}
	}
	if seen != 6 {
		t.Errorf("layer 3 has %d expert tensors, want 6", seen)
	}
}
