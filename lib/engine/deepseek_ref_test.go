package engine

import (
	"fmt"
	"math"
	"sort"
)

// The float64 reference's DeepSeek-V3 layer, written from transformers'
// modeling_deepseek_v3.py and _compute_yarn_parameters, not from the
// engine: queries through q_a_proj → q_a_layernorm → q_b_proj (or
// q_proj), kv_a_proj_with_mqa split into the latent (normalised and
// expanded by kv_b_proj into k_nope and v per head) and the shared k_rot;
// rotary as apply_rotary_pos_emb_interleave does it (de-interleave the
// rotary part, then rotate_half with cos/sin repeated over both halves);
// softmax scale qk_head_dim^-0.5 times mscale(factor, mscale_all_dim)²;
// the MoE of route_tokens_to_experts plus the shared experts. Adapters
// merge into the weights like every other refModel matrix (the routed
// experts' through refModel.expert).

// deepseekLayer runs layer l on the residual rows xs in place.
func (r *refModel) deepseekLayer(l int, xs [][]float64) {
	c, m := r.c, r.c.MLA
	pre := fmt.Sprintf("model.layers.%d.", l)
	a := pre + "self_attn."
	nope, rope, vd := m.QKNopeDim, m.QKRopeDim, m.VHeadDim
	qk := nope + rope
	type head struct{ q, k, v []float64 }
	heads := make([][]head, len(xs)) // [position][head]
	for p, x := range xs {
		xn := refRMSNorm(x, r.vec(pre+"input_layernorm.weight"), c.RMSNormEps)
		var q []float64
		if m.QLoraRank > 0 {
			q = refMatVec(r.weight(a+"q_b_proj.weight"),
				refRMSNorm(refMatVec(r.weight(a+"q_a_proj.weight"), xn), r.vec(a+"q_a_layernorm.weight"), c.RMSNormEps))
		} else {
			q = refMatVec(r.weight(a+"q_proj.weight"), xn)
		}
		ckv := refMatVec(r.weight(a+"kv_a_proj_with_mqa.weight"), xn)
		kv := refMatVec(r.weight(a+"kv_b_proj.weight"), refRMSNorm(ckv[:m.KVLoraRank], r.vec(a+"kv_a_layernorm.weight"), c.RMSNormEps))
		kRot := r.dsRope(ckv[m.KVLoraRank:], p)
		for h := range c.Heads {
			qh, kvh := q[h*qk:(h+1)*qk], kv[h*(nope+vd):(h+1)*(nope+vd)]
			heads[p] = append(heads[p], head{
				q: append(append([]float64(nil), qh[:nope]...), r.dsRope(qh[nope:], p)...),
				k: append(append([]float64(nil), kvh[:nope]...), kRot...),
				v: kvh[nope:],
			})
		}
	}
	scale := 1 / math.Sqrt(float64(qk))
	if s := c.RopeScaling; s != nil && s.MScaleAllDim != 0 {
		ms := refMScale(s.Factor, s.MScaleAllDim)
		scale *= ms * ms
	}
	for p := range xs {
		att := make([]float64, 0, c.Heads*vd)
		for h := range c.Heads {
			w := make([]float64, p+1)
			for t := range w {
				for i := range qk {
					w[t] += heads[p][h].q[i] * heads[t][h].k[i]
				}
				w[t] *= scale
			}
			refSoftmax(w)
			o := make([]float64, vd)
			for t, pt := range w {
				for i := range o {
					o[i] += pt * heads[t][h].v[i]
				}
			}
			att = append(att, o...)
		}
		o := refMatVec(r.weight(a+"o_proj.weight"), att)
		for i := range xs[p] {
			xs[p][i] += o[i]
		}
	}
	for _, x := range xs {
		xn := refRMSNorm(x, r.vec(pre+"post_attention_layernorm.weight"), c.RMSNormEps)
		mlp := pre + "mlp."
		var out []float64
		if c.IsMoELayer(l) {
			out = r.dsMoE(pre, xn)
			mlp += "shared_experts."
		}
		y := refSwiGLU(r.weight(mlp+"gate_proj.weight"), r.weight(mlp+"up_proj.weight"), r.weight(mlp+"down_proj.weight"), xn)
		for i := range x {
			x[i] += y[i]
			if out != nil {
				x[i] += out[i]
			}
		}
	}
}

func refSoftmax(w []float64) {
	mx := math.Inf(-1)
	for _, v := range w {
		mx = math.Max(mx, v)
	}
	var sum float64
	for i, v := range w {
		w[i] = math.Exp(v - mx)
		sum += w[i]
	}
	for i := range w {
		w[i] /= sum
	}
}

// refMScale is yarn_get_mscale.
func refMScale(factor, m float64) float64 {
	if factor <= 1 {
		return 1
	}
	return 0.1*m*math.Log(factor) + 1
}

// dsRope returns the rotary part x at position pos as
// apply_rotary_pos_emb_interleave leaves it (or apply_rotary_pos_emb's
// rotate_half without rope_interleave): de-interleaved, then rotated,
// cos and sin times YaRN's attention factor.
func (r *refModel) dsRope(x []float64, pos int) []float64 {
	c, d := r.c, len(x)
	y := append([]float64(nil), x...)
	if c.Routing.RopeInterleave {
		for j := range d / 2 {
			y[j], y[d/2+j] = x[2*j], x[2*j+1]
		}
	}
	rc := c
	rc.HeadDim = d // the rotary dimension: head_dim is qk_rope_head_dim there
	af := refYarnScale(c)
	if s := c.RopeScaling; s != nil && s.MScale != 0 && s.MScaleAllDim != 0 {
		af = refMScale(s.Factor, s.MScale) / refMScale(s.Factor, s.MScaleAllDim)
	}
	out := make([]float64, d)
	for i := range d {
		ang := float64(pos) * refFreq(rc, i%(d/2))
		rot := -y[(i+d/2)%d] // rotate_half: [-y2, y1]
		if i >= d/2 {
			rot = y[i-d/2]
		}
		out[i] = y[i]*math.Cos(ang)*af + rot*math.Sin(ang)*af
	}
	return out
}

// dsMoE is DeepseekV3MoE's routed part for one normalised row xn.
func (r *refModel) dsMoE(pre string, xn []float64) []float64 {
	c, rt := r.c, r.c.Routing
	logits := refMatVec(r.weight(pre+"mlp.gate.weight"), xn)
	bias := r.vec(pre + "mlp.gate.e_score_correction_bias")
	E, size := len(logits), len(logits)/rt.Groups
	scores, choice := make([]float64, E), make([]float64, E)
	for e, l := range logits {
		scores[e] = 1 / (1 + math.Exp(-l))
		choice[e] = scores[e] + bias[e]
	}
	groupScore := make([]float64, rt.Groups)
	for g := range rt.Groups {
		vals := append([]float64(nil), choice[g*size:(g+1)*size]...)
		sort.Sort(sort.Reverse(sort.Float64Slice(vals)))
		groupScore[g] = vals[0] + vals[1]
	}
	groups := byValue(groupScore)
	if rt.TopKGroups < rt.Groups {
		r.noteMargin(groupScore[groups[rt.TopKGroups-1]] - groupScore[groups[rt.TopKGroups]])
		for _, g := range groups[rt.TopKGroups:] {
			for e := g * size; e < (g+1)*size; e++ {
				choice[e] = 0
			}
		}
	}
	order := byValue(choice)
	k := c.ExpertsPerToken
	r.noteMargin(choice[order[k-1]] - choice[order[k]])
	var sum float64
	for _, e := range order[:k] {
		sum += scores[e]
	}
	out := make([]float64, c.Hidden)
	for _, e := range order[:k] {
		w := scores[e]
		if c.NormTopKProb {
			w /= sum + 1e-20
		}
		w *= rt.ScalingFactor
		y := refSwiGLU(r.expert(pre, e, "gate_proj"), r.expert(pre, e, "up_proj"), r.expert(pre, e, "down_proj"), xn)
		for i := range out {
			out[i] += w * y[i]
		}
	}
	return out
}

// byValue lists indices by descending value, ties to the lower index.
func byValue(v []float64) []int {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] > v[idx[b]] })
	return idx
}
