package engine

import (
	"fmt"
	"math"
	"sort"
)

// The float64 reference's GPT-OSS parts, written from transformers'
// modeling_gpt_oss.py and _compute_yarn_parameters: biases, sinks,
// sliding windows, YaRN, and the top-k-then-softmax routing with the
// clamped gated activation.

// refYarnFreq is pair i's YaRN frequency, f its unscaled one.
func refYarnFreq(c Config, i int, f float64) float64 {
	s := c.RopeScaling
	dim := float64(c.HeadDim)
	fast, slow := s.BetaFast, s.BetaSlow
	if fast == 0 {
		fast = 32
	}
	if slow == 0 {
		slow = 1
	}
	corrDim := func(rot float64) float64 {
		return dim * math.Log(float64(s.OriginalMaxPositionEmbeddings)/(rot*2*math.Pi)) / (2 * math.Log(c.RopeTheta))
	}
	low, high := corrDim(fast), corrDim(slow)
	if s.Truncate == nil || *s.Truncate {
		low, high = math.Floor(low), math.Ceil(high)
	}
	low, high = math.Max(low, 0), math.Min(high, dim-1)
	if low == high {
		high += 0.001
	}
	ramp := math.Min(math.Max((float64(i)-low)/(high-low), 0), 1)
	extrapolation := 1 - ramp
	return f/s.Factor*(1-extrapolation) + f*extrapolation
}

// refYarnScale is YaRN's factor on cos and sin.
func refYarnScale(c Config) float64 {
	s := c.RopeScaling
	if s == nil || s.Type != "yarn" {
		return 1
	}
	if s.AttentionFactor != 0 {
		return s.AttentionFactor
	}
	if s.Factor > 1 {
		return 0.1*math.Log(s.Factor) + 1
	}
	return 1
}

// addBias adds the vector name to x when the model has it.
func (r *refModel) addBias(name string, x []float64) {
	if _, ok := r.ts[name]; !ok {
		return
	}
	for i, b := range r.vec(name) {
		x[i] += b
	}
}

// firstKey is the first position a query at p sees in layer l.
func (r *refModel) firstKey(l, p int) int {
	if l < len(r.c.LayerTypes) && r.c.LayerTypes[l] == "sliding_attention" {
		return max(0, p-r.c.SlidingWindow+1)
	}
	return 0
}

// sink is head h's sink logit in the layer with prefix pre, if any.
func (r *refModel) sink(pre string, h int) (float64, bool) {
	if _, ok := r.ts[pre+"self_attn.sinks"]; !ok {
		return 0, false
	}
	return r.vec(pre + "self_attn.sinks")[h], true
}

// gptOssMoE is GPT-OSS's expert layer on xn.
func (r *refModel) gptOssMoE(pre string, xn []float64) []float64 {
	c := r.c
	logits := refMatVec(r.weight(pre+"mlp.router.weight"), xn)
	r.addBias(pre+"mlp.router.bias", logits)
	order := make([]int, len(logits))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return logits[order[a]] > logits[order[b]] })
	top := order[:c.ExpertsPerToken]
	if k := c.ExpertsPerToken; k < len(order) {
		r.noteMargin(logits[order[k-1]] - logits[order[k]])
	}
	mx := logits[top[0]]
	var sum float64
	for _, e := range top {
		sum += math.Exp(logits[e] - mx)
	}
	out := make([]float64, c.Hidden)
	lim := c.SwigluLimit
	for _, e := range top {
		w := math.Exp(logits[e]-mx) / sum
		g := refMatVec(r.expert(pre, e, "gate_proj"), xn)
		u := refMatVec(r.expert(pre, e, "up_proj"), xn)
		r.addBias(fmt.Sprintf("%smlp.experts.%d.gate_proj.bias", pre, e), g)
		r.addBias(fmt.Sprintf("%smlp.experts.%d.up_proj.bias", pre, e), u)
		for i := range g {
			gc := math.Min(g[i], lim)
			uc := math.Max(-lim, math.Min(u[i], lim))
			g[i] = (uc + 1) * gc / (1 + math.Exp(-1.702*gc))
		}
		y := refMatVec(r.expert(pre, e, "down_proj"), g)
		r.addBias(fmt.Sprintf("%smlp.experts.%d.down_proj.bias", pre, e), y)
		for i := range out {
			out[i] += w * y[i]
		}
	}
	return out
}
