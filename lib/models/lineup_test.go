package models

import (
	"math"
	"strings"
	"testing"
)

// loraPerRank is tinker-cookbook's table of the service's LoRA parameter
// counts at rank 1 (hyperparam_utils.py, _LORA_PARAMS_PER_RANK_BY_COMPONENT,
// August 2026): mlp, attn, unembed.
var loraPerRank = map[string][3]int{
	"Qwen/Qwen3-235B-A22B-Instruct-2507":                {56_598_528, 3_176_448, 156_032},
	"Qwen/Qwen3-30B-A3B":                                {14_450_688, 835_584, 153_984},
	"Qwen/Qwen3-30B-A3B-Base":                           {14_450_688, 835_584, 153_984},
	"Qwen/Qwen3-30B-A3B-Instruct-2507":                  {14_450_688, 835_584, 153_984},
	"Qwen/Qwen3-32B":                                    {5_898_240, 2_490_368, 157_056},
	"Qwen/Qwen3-4B-Instruct-2507":                       {1_327_104, 737_280, 154_496},
	"Qwen/Qwen3-8B":                                     {1_769_472, 958_464, 156_032},
	"Qwen/Qwen3-8B-Base":                                {1_769_472, 958_464, 156_032},
	"Qwen/Qwen3-VL-235B-A22B-Instruct":                  {56_598_528, 3_176_448, 156_032},
	"Qwen/Qwen3-VL-30B-A3B-Instruct":                    {14_450_688, 835_584, 153_984},
	"deepseek-ai/DeepSeek-V3.1":                         {94_307_328, 2_440_000, 136_448},
	"deepseek-ai/DeepSeek-V3.1-Base":                    {94_307_328, 2_440_000, 136_448},
	"meta-llama/Llama-3.1-70B":                          {8_847_360, 4_096_000, 136_448},
	"meta-llama/Llama-3.1-8B":                           {1_769_472, 851_968, 132_352},
	"meta-llama/Llama-3.1-8B-Instruct":                  {1_769_472, 851_968, 132_352},
	"meta-llama/Llama-3.2-1B":                           {491_520, 212_992, 130_304},
	"meta-llama/Llama-3.2-3B":                           {946_176, 573_440, 131_328},
	"meta-llama/Llama-3.3-70B-Instruct":                 {8_847_360, 4_096_000, 136_448},
	"moonshotai/Kimi-K2-Thinking":                       {144_583_680, 1_940_288, 171_008},
	"moonshotai/Kimi-K2.5":                              {144_583_680, 1_940_288, 171_008},
	"moonshotai/Kimi-K2.6":                              {144_583_680, 1_940_288, 171_008},
	"openai/gpt-oss-120b":                               {40_124_160, 746_496, 203_968},
	"openai/gpt-oss-20b":                                {6_842_880, 497_664, 203_968},
	"Qwen/Qwen3.5-27B":                                  {4_325_376, 2_965_504, 253_440},
	"Qwen/Qwen3.5-35B-A3B":                              {16_281_600, 1_013_760, 250_368},
	"Qwen/Qwen3.5-35B-A3B-Base":                         {16_281_600, 1_013_760, 250_368},
	"Qwen/Qwen3.5-397B-A17B":                            {96_030_720, 2_841_600, 252_416},
	"Qwen/Qwen3.5-4B":                                   {1_130_496, 897_024, 250_880},
	"Qwen/Qwen3.5-9B":                                   {1_572_864, 1_130_496, 252_416},
	"Qwen/Qwen3.5-9B-Base":                              {1_572_864, 1_130_496, 252_416},
	"Qwen/Qwen3.6-27B":                                  {4_325_376, 2_965_504, 253_440},
	"Qwen/Qwen3.6-35B-A3B":                              {16_281_600, 1_013_760, 250_368},
	"Qwen/Qwen3.8-27B":                                  {4_325_376, 2_965_504, 253_440},
	"nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16":        {11_346_176, 584_832, 133_760},
	"nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16": {11_346_176, 584_832, 133_760},
	"nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16":     {111_349_760, 1_675_264, 135_168},
	"nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16":     {254_529_536, 4_134_912, 139_264},
	"thinkingmachines/Inkling":                          {154_705_920, 3_424_256, 207_168},
}

// serviceLoRACounts computes those counts from a catalog shape under the
// service's scheme: attention q/k/v/o (MLA: q_a, kv_a_with_mqa and o), dense
// MLPs gate/up/down, routed experts w1/w2/w3 with the factor on the hidden
// side shared by all experts ("shared-outer", as the cookbook documents),
// DeepSeek's shared experts as a dense MLP, and the unembedding.
func serviceLoRACounts(a *Arch) (mlp, attn, unembed int) {
	h := a.Hidden
	for i := 0; i < a.Layers; i++ {
		if m := a.MLA; m != nil {
			attn += (h + m.QLoraRank) + (h + m.KVLoraRank + m.QKRopeDim) + (a.Heads*m.VHeadDim + h)
		} else {
			q, kv := a.Heads*a.HeadDim, a.KVHeads*a.HeadDim
			attn += (h + q) + 2*(h+kv) + (q + h)
		}
		if !a.IsMoELayer(i) {
			mlp += 3 * (h + a.Intermediate)
			continue
		}
		mlp += 3 * (h + a.Experts*a.MoEIntermediate)
		if a.SharedExperts > 0 {
			mlp += 3 * (h + a.SharedExperts*a.MoEIntermediate)
		}
	}
	return mlp, attn, h + a.VocabSize
}

// The catalog's shapes reproduce the cookbook's LoRA parameter counts for
// every model it has: layers, widths, experts, heads and vocabularies agree
// with what the service trains. For the lineup outside the catalog, hidden
// + vocabulary give the unembedding count.
func TestLoRACountsMatchCookbook(t *testing.T) {
	for name, want := range loraPerRank {
		if a, ok := Lookup(name); ok {
			mlp, attn, un := serviceLoRACounts(a)
			if [3]int{mlp, attn, un} != want {
				t.Errorf("%s: mlp %d attn %d unembed %d, cookbook %v", name, mlp, attn, un, want)
			}
			continue
		}
		n, m, ok := lookupLineup(name)
		if !ok {
			t.Errorf("%s: neither in the catalog nor in the lineup", name)
			continue
		}
		vocab := map[string]int{"Qwen/": 248320, "nvidia/": 131072} // Inkling's vocabulary is private
		for prefix, v := range vocab {
			if strings.HasPrefix(n, prefix) && m.hidden+v != want[2] {
				t.Errorf("%s: hidden %d + vocab %d != cookbook unembed %d", n, m.hidden, v, want[2])
			}
		}
	}
	for _, a := range All() {
		if _, ok := loraPerRank[a.Name]; !ok && !IsTiny(a.Name) {
			t.Errorf("%s: no cookbook count to check its shape against", a.Name)
		}
	}
}

func TestKimiCatalog(t *testing.T) {
	k2, _ := Lookup("moonshotai/Kimi-K2-Thinking")
	if k2.FirstDenseLayers != 1 || k2.IsMoELayer(0) || !k2.IsMoELayer(1) {
		t.Errorf("Kimi K2: first_k_dense_replace is 1, got %d", k2.FirstDenseLayers)
	}
	for _, n := range []string{"moonshotai/Kimi-K2.5", "moonshotai/Kimi-K2.6"} {
		a, ok := Lookup(n)
		if !ok || a.Shape.Family != DeepSeekV3 || a.Layers != k2.Layers || *a.MLA != *k2.MLA || a.Experts != 384 || a.TokenizerID != n {
			t.Errorf("%s: %+v", n, a)
		}
	}
}

func TestNotInCatalog(t *testing.T) {
	cases := map[string]string{
		"qwen/qwen3.5-27b:peft:1":                    "Qwen/Qwen3.5-27B is not in tinker's model catalog: its layers mix Gated DeltaNet",
		"nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": "Mamba-2",
		"thinkingmachines/Inkling":                   "private",
		"nobody/x":                                   `unknown base model "nobody/x"`,
	}
	for name, want := range cases {
		if err := NotInCatalog(name); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("NotInCatalog(%q) = %v, want one line with %q", name, err, want)
		}
	}
	for _, m := range lineup {
		if _, ok := Lookup(m.name); ok {
			t.Errorf("%s is in both the catalog and the lineup", m.name)
		}
	}
}

// lr_for on the lineup outside the catalog: Qwen3.5/3.6/3.8 by Qwen's rule
// from their hidden size, as the cookbook's get_lr; Nemotron and Inkling
// have no calibrated rule.
func TestLineupLearningRate(t *testing.T) {
	for name, hidden := range map[string]float64{"Qwen/Qwen3.5-27B": 5120, "Qwen/Qwen3.6-35B-A3B": 2048, "Qwen/Qwen3.5-4B": 2560} {
		got, err := LoRALearningRate(name)
		if want := 5e-4 * math.Pow(2000/hidden, 0.0775); err != nil || math.Abs(got-want) > 1e-12 {
			t.Errorf("%s: %g %v, want %g", name, got, err, want)
		}
	}
	for _, name := range []string{"nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16", "thinkingmachines/Inkling", "moonshotai/Kimi-K2.6"} {
		if _, err := LoRALearningRate(name); err == nil || !strings.Contains(err.Error(), "calibrated") {
			t.Errorf("%s: want a not-calibrated error, got %v", name, err)
		}
	}
}

// What adding Qwen3.5 to the catalog needs, pinned: the text_config of
// Qwen3.5-4B, 9B, 27B (also 3.6/3.8-27B) and 35B-A3B as their config.json
// files publish them (full_attention_interval 4), under the
// service's LoRA targets (tinker-cookbook's _merge_qwen3_5.py: separate
// in_proj_q/k/v adapters where the checkpoint fuses in_proj_qkv; the counts
// add in_proj_z and out_proj, not in_proj_a/b; full-attention layers gate
// their output, so q_proj is twice heads×head_dim) give the cookbook's counts.
func TestQwen35LoRATargetsDeduced(t *testing.T) {
	type cfg struct {
		layers, hidden, inter, heads, kv, headDim, linK, linV, linDim, experts, moeInter, shared int
	}
	counts := func(c cfg) (mlp, attn int) {
		h := c.hidden
		for i := 0; i < c.layers; i++ {
			if i%4 == 3 { // full_attention_interval 4
				q, kv := c.heads*c.headDim, c.kv*c.headDim
				attn += (h + 2*q) + 2*(h+kv) + (q + h)
			} else {
				k, v := c.linK*c.linDim, c.linV*c.linDim
				attn += 2*(h+k) + 2*(h+v) + (v + h) // in_proj_q, _k, _v, _z, out_proj
			}
			if c.experts == 0 {
				mlp += 3 * (h + c.inter)
			} else {
				mlp += 3*(h+c.experts*c.moeInter) + 3*(h+c.shared)
			}
		}
		return mlp, attn
	}
	for name, c := range map[string]cfg{
		"Qwen/Qwen3.5-4B":      {32, 2560, 9216, 16, 4, 256, 16, 32, 128, 0, 0, 0},
		"Qwen/Qwen3.5-9B":      {32, 4096, 12288, 16, 4, 256, 16, 32, 128, 0, 0, 0},
		"Qwen/Qwen3.5-27B":     {64, 5120, 17408, 24, 4, 256, 16, 48, 128, 0, 0, 0},
		"Qwen/Qwen3.5-35B-A3B": {40, 2048, 0, 16, 2, 256, 16, 32, 128, 256, 512, 512},
	} {
		mlp, attn := counts(c)
		if want := loraPerRank[name]; mlp != want[0] || attn != want[1] {
			t.Errorf("%s: mlp %d attn %d, cookbook %v", name, mlp, attn, want)
		}
	}
}
