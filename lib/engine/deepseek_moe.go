package engine

// DeepSeek-V3's routing, as transformers' DeepseekV3MoE.route_tokens_to_experts
// computes it: scores s = sigmoid(logits); the choice uses s plus the
// correction bias; each of n_group groups is ranked by the sum of its two
// best choice values, the topk_group best groups stay, every expert of
// the others counts 0 (not −∞: with negative biases a dropped group's
// expert can still win, as it does there); the top k experts are picked
// and weighted by their unbiased s, renormalised to sum to 1 when
// norm_topk_prob (plus 1e-20), times routed_scaling_factor. Everything is
// float64 with exp64; ties go to the lower index.

// sigmoid64 is 1/(1+e^−x) with the engine's exp64.
func sigmoid64(x float64) float64 { return 1 / (1 + exp64(-x)) }

// routeGrouped picks one token's experts into sel (ascending) and their
// weights into wts; scores is scratch of one float64 per expert.
func routeGrouped(c Config, bias, logits []float32, sel []int, wts []float32, scores []float64) {
	r := c.Routing
	choice := make([]float64, len(logits))
	for e, l := range logits {
		scores[e] = sigmoid64(float64(l))
		choice[e] = scores[e] + float64(bias[e])
	}
	if r.TopKGroups < r.Groups {
		keepGroups(choice, r.Groups, r.TopKGroups)
	}
	routeTopK(choice, sel)
	var sum float64
	for _, e := range sel {
		sum += scores[e]
	}
	for j, e := range sel {
		w := scores[e]
		if c.NormTopKProb {
			w /= sum + 1e-20
		}
		wts[j] = float32(w * r.ScalingFactor)
	}
}

// keepGroups sets choice to 0 outside the keep groups (of n) whose two
// largest values sum highest.
func keepGroups(choice []float64, n, keep int) {
	size := len(choice) / n
	sums := make([]float64, n)
	two := make([]int, 2)
	for g := range n {
		grp := choice[g*size : (g+1)*size]
		routeTopK(grp, two)
		sums[g] = grp[two[0]] + grp[two[1]]
	}
	kept := make([]int, keep)
	routeTopK(sums, kept)
	for g := range n {
		if !taken(kept, g) {
			clear(choice[g*size : (g+1)*size])
		}
	}
}

// groupedBackward writes into dlog the gradient of one token's router
// logits given dw, that of its chosen experts' weights. The choice itself
// (groups, correction bias) has no gradient; w_j = R·s_j/(Σs + ε) with
// norm_topk_prob, else R·s_j, and ds/dlogit = s·(1 − s).
func groupedBackward(c Config, logits []float32, sel []int, dw []float64, dlog []float32) {
	r := c.Routing
	s := make([]float64, len(sel))
	var sum, dot float64
	for j, e := range sel {
		s[j] = sigmoid64(float64(logits[e]))
		sum += s[j]
		dot += float64(dw[j] * s[j])
	}
	clear(dlog)
	for j, e := range sel {
		ds := r.ScalingFactor * dw[j]
		if c.NormTopKProb {
			den := sum + 1e-20
			ds = r.ScalingFactor * (dw[j]/den - dot/(den*den))
		}
		dlog[e] = float32(float64(ds*s[j]) * (1 - s[j]))
	}
}
