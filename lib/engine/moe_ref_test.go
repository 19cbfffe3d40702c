package engine

import (
	"fmt"
	"math"
	"sort"

	"github.com/tinkershell/tinker/lib/models"
)

// The reference's mixture-of-experts MLP, written from the published
// semantics of transformers' Qwen3MoeSparseMoeBlock: softmax of the
// router's logits over all experts, the top-k probabilities (ties to the
// lower index, as a stable sort gives), divided by their sum when
// norm_topk_prob, and the probability-weighted sum of those experts'
// SwiGLU MLPs. Expert adapters (stacked w1/w2/w3 PEFT tensors) are merged
// into each expert's weights, like every other adapter in refModel.

func (r *refModel) moe(pre string, xn []float64) []float64 {
	c := r.c
	if c.Family == models.GptOss {
		return r.gptOssMoE(pre, xn)
	}
	logits := refMatVec(r.weight(pre+"mlp.gate.weight"), xn)
	mx := math.Inf(-1)
	for _, l := range logits {
		mx = math.Max(mx, l)
	}
	probs := make([]float64, len(logits))
	var sum float64
	for i, l := range logits {
		probs[i] = math.Exp(l - mx)
		sum += probs[i]
	}
	order := make([]int, len(probs))
	for i := range order {
		order[i] = i
		probs[i] /= sum
	}
	sort.SliceStable(order, func(a, b int) bool { return probs[order[a]] > probs[order[b]] })
	top := order[:c.ExpertsPerToken]
	if k := c.ExpertsPerToken; k < len(order) {
		r.noteMargin(logits[order[k-1]] - logits[order[k]])
	}
	var kept float64
	for _, e := range top {
		kept += probs[e]
	}
	out := make([]float64, c.Hidden)
	for _, e := range top {
		w := probs[e]
		if c.NormTopKProb {
			w /= kept
		}
		y := refSwiGLU(r.expert(pre, e, "gate_proj"), r.expert(pre, e, "up_proj"), r.expert(pre, e, "down_proj"), xn)
		for i := range out {
			out[i] += w * y[i]
		}
	}
	return out
}

// expert returns expert e's matrix proj with the stacked adapter (gate_proj:
// w1, up_proj: w3, down_proj: w2) merged: slice e of a factor with one
// slice per expert, the only slice of a shared one.
func (r *refModel) expert(pre string, e int, proj string) [][]float64 {
	name := fmt.Sprintf("%smlp.experts.%d.%s.weight", pre, e, proj)
	if w, ok := r.cache[name]; ok {
		return w
	}
	w := r.weight(name) // no adapter tensor has this name: the base matrix
	kind := map[string]string{"gate_proj": "w1", "up_proj": "w3", "down_proj": "w2"}[proj]
	a, okA := r.lora["base_model.model."+pre+"mlp.experts."+kind+".lora_A.weight"]
	b, okB := r.lora["base_model.model."+pre+"mlp.experts."+kind+".lora_B.weight"]
	if !okA || !okB {
		return w
	}
	rank, in, out := a.Shape[1], a.Shape[2], b.Shape[1]
	ea, eb := e%a.Shape[0], e%b.Shape[0] // a leading dimension of 1: shared
	merged := make([][]float64, out)
	for i := range out {
		merged[i] = make([]float64, in)
		for j := range in {
			var s float64
			for k := range rank {
				s += float64(b.Data[(eb*out+i)*rank+k]) * float64(a.Data[(ea*rank+k)*in+j])
			}
			merged[i][j] = w[i][j] + r.scale*s
		}
	}
	r.cache[name] = merged
	return merged
}

// noteMargin records the smallest gap seen between the last chosen
// expert's router logit and the next one's: finite differences across a
// change of routing measure a jump, not a derivative, so gradient tests
// check their data keeps clear of one.
func (r *refModel) noteMargin(gap float64) {
	if r.margin == nil {
		r.margin = new(float64)
		*r.margin = math.Inf(1)
	}
	*r.margin = math.Min(*r.margin, gap)
}
