package engine

import (
	"fmt"
	"math"

	"github.com/tinkershell/tinker/lib/models"
)

// refModel is an independent, deliberately plain forward pass used to check
// the engine: float64 throughout, no KV cache (every call recomputes the
// whole sequence), weights read straight from the Hugging Face-named tensors,
// LoRA applied by merging W + (alpha/r)·B·A. It shares no code with the
// engine except the Config struct.
type refModel struct {
	c     Config
	ts    Tensors
	lora  Tensors // PEFT-named, may be nil
	scale float64
	cache map[string][][]float64
	// margin, when not nil, is the smallest router logit gap at the
	// top-k boundary seen so far (moe_ref_test.go).
	margin *float64
}

// weight returns a matrix in float64 with any adapter merged (memoized: the
// reference is rerun for every generated token).
func (r *refModel) weight(name string) [][]float64 {
	if w, ok := r.cache[name]; ok {
		return w
	}
	if r.cache == nil {
		r.cache = map[string][][]float64{}
	}
	w := r.convert(name)
	r.cache[name] = w
	return w
}

func (r *refModel) convert(name string) [][]float64 {
	t, ok := r.ts[name]
	if !ok {
		panic("ref: missing " + name)
	}
	rows, cols := t.Shape[0], t.Shape[1]
	w := make([][]float64, rows)
	for i := range w {
		w[i] = make([]float64, cols)
		for j := range w[i] {
			w[i][j] = float64(t.Data[i*cols+j])
		}
	}
	// Merge the adapter, if this matrix has one.
	if r.lora != nil {
		a, okA := r.lora["base_model.model."+name[:len(name)-len(".weight")]+".lora_A.weight"]
		b, okB := r.lora["base_model.model."+name[:len(name)-len(".weight")]+".lora_B.weight"]
		if okA && okB {
			rank := a.Shape[0]
			for i := range rows {
				for j := range cols {
					var s float64
					for k := range rank {
						s += float64(b.Data[i*rank+k]) * float64(a.Data[k*cols+j])
					}
					w[i][j] += r.scale * s
				}
			}
		}
	}
	return w
}

func (r *refModel) vec(name string) []float64 {
	t := r.ts[name]
	v := make([]float64, len(t.Data))
	for i, x := range t.Data {
		v[i] = float64(x)
	}
	return v
}

func refMatVec(w [][]float64, x []float64) []float64 {
	y := make([]float64, len(w))
	for i, row := range w {
		for j, v := range row {
			y[i] += v * x[j]
		}
	}
	return y
}

func refRMSNorm(x, g []float64, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	s := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * s * g[i]
	}
	return out
}

// refFreq is the rotary frequency of pair i, with Llama 3.1 scaling.
func refFreq(c Config, i int) float64 {
	f := math.Pow(c.RopeTheta, -2*float64(i)/float64(c.HeadDim))
	s := c.RopeScaling
	if s != nil && s.Type == "yarn" {
		return refYarnFreq(c, i, f)
	}
	if s == nil || s.Type != "llama3" {
		return f
	}
	orig := float64(s.OriginalMaxPositionEmbeddings)
	wl := 2 * math.Pi / f
	if wl < orig/s.HighFreqFactor {
		return f
	}
	if wl > orig/s.LowFreqFactor {
		return f / s.Factor
	}
	sm := (orig/wl - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
	return (1-sm)*f/s.Factor + sm*f
}

func refRope(c Config, x []float64, pos int) {
	d := c.HeadDim
	for h := 0; h < len(x); h += d {
		for i := 0; i < d/2; i++ {
			a := float64(pos) * refFreq(c, i)
			cos, sin := math.Cos(a)*refYarnScale(c), math.Sin(a)*refYarnScale(c)
			x1, x2 := x[h+i], x[h+i+d/2]
			x[h+i] = x1*cos - x2*sin
			x[h+i+d/2] = x2*cos + x1*sin
		}
	}
}

// logits returns the logits at every position of tokens.
func (r *refModel) logits(tokens []int) [][]float64 {
	c := r.c
	embed := r.weight("model.embed_tokens.weight")
	xs := make([][]float64, len(tokens))
	for p, t := range tokens {
		xs[p] = append([]float64(nil), embed[t]...)
	}
	d := c.HeadDim
	for l := range c.Layers {
		if c.MLA != nil {
			r.deepseekLayer(l, xs)
			continue
		}
		pre := fmt.Sprintf("model.layers.%d.", l)
		wq, wk, wv, wo := r.weight(pre+"self_attn.q_proj.weight"), r.weight(pre+"self_attn.k_proj.weight"),
			r.weight(pre+"self_attn.v_proj.weight"), r.weight(pre+"self_attn.o_proj.weight")
		qs, ks, vs := make([][]float64, len(xs)), make([][]float64, len(xs)), make([][]float64, len(xs))
		for p, x := range xs {
			xn := refRMSNorm(x, r.vec(pre+"input_layernorm.weight"), c.RMSNormEps)
			qs[p], ks[p], vs[p] = refMatVec(wq, xn), refMatVec(wk, xn), refMatVec(wv, xn)
			r.addBias(pre+"self_attn.q_proj.bias", qs[p])
			r.addBias(pre+"self_attn.k_proj.bias", ks[p])
			r.addBias(pre+"self_attn.v_proj.bias", vs[p])
			if c.Family == models.Qwen3 || c.Family == models.Qwen3MoE {
				for h := 0; h < len(qs[p]); h += d {
					copy(qs[p][h:h+d], refRMSNorm(qs[p][h:h+d], r.vec(pre+"self_attn.q_norm.weight"), c.RMSNormEps))
				}
				for h := 0; h < len(ks[p]); h += d {
					copy(ks[p][h:h+d], refRMSNorm(ks[p][h:h+d], r.vec(pre+"self_attn.k_norm.weight"), c.RMSNormEps))
				}
			}
			refRope(c, qs[p], p)
			refRope(c, ks[p], p)
		}
		for p := range xs {
			att := make([]float64, c.Heads*d)
			for h := range c.Heads {
				kvh := h / (c.Heads / c.KVHeads)
				sc := make([]float64, p+1)
				mx := math.Inf(-1)
				lo := r.firstKey(l, p) // keys before lo are masked (sliding window)
				for t := lo; t <= p; t++ {
					for i := range d {
						sc[t] += qs[p][h*d+i] * ks[t][kvh*d+i]
					}
					sc[t] /= math.Sqrt(float64(d))
					mx = math.Max(mx, sc[t])
				}
				sink, hasSink := r.sink(pre, h)
				if hasSink {
					mx = math.Max(mx, sink)
				}
				var sum float64
				for t := range sc {
					if t < lo {
						continue
					}
					sc[t] = math.Exp(sc[t] - mx)
					sum += sc[t]
				}
				if hasSink { // the sink joins the denominator only
					sum += math.Exp(sink - mx)
				}
				for t := range sc {
					for i := range d {
						att[h*d+i] += sc[t] / sum * vs[t][kvh*d+i]
					}
				}
			}
			o := refMatVec(wo, att)
			r.addBias(pre+"self_attn.o_proj.bias", o)
			for i := range xs[p] {
				xs[p][i] += o[i]
			}
		}
		for _, x := range xs {
			xn := refRMSNorm(x, r.vec(pre+"post_attention_layernorm.weight"), c.RMSNormEps)
			var dn []float64
			if c.IsMoELayer(l) {
				dn = r.moe(pre, xn)
			} else {
				dn = refSwiGLU(r.weight(pre+"mlp.gate_proj.weight"), r.weight(pre+"mlp.up_proj.weight"), r.weight(pre+"mlp.down_proj.weight"), xn)
			}
			for i := range x {
				x[i] += dn[i]
			}
		}
	}
	head := "lm_head.weight"
	if c.TieWordEmbeddings {
		head = "model.embed_tokens.weight"
	}
	wh := r.weight(head)
	if r.lora != nil && c.TieWordEmbeddings {
		// A tied model's lm_head adapter applies to the output use only.
		if r.cache["tied lm_head"] == nil {
			r.cache["tied lm_head"] = r.tiedHead()
		}
		wh = r.cache["tied lm_head"]
	}
	out := make([][]float64, len(xs))
	for p, x := range xs {
		out[p] = refMatVec(wh, refRMSNorm(x, r.vec("model.norm.weight"), c.RMSNormEps))
	}
	return out
}

// refSwiGLU is down(silu(gate·x) ⊙ up·x).
func refSwiGLU(wg, wu, wd [][]float64, x []float64) []float64 {
	g, u := refMatVec(wg, x), refMatVec(wu, x)
	for i := range g {
		g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
	}
	return refMatVec(wd, g)
}

func (r *refModel) tiedHead() [][]float64 {
	saved := r.ts["lm_head.weight"]
	_, had := r.ts["lm_head.weight"]
	r.ts["lm_head.weight"] = r.ts["model.embed_tokens.weight"]
	w := r.convert("lm_head.weight")
	if had {
		r.ts["lm_head.weight"] = saved
	} else {
		delete(r.ts, "lm_head.weight")
	}
	return w
}

func refLogSoftmax(logits []float64, invT float64) []float64 {
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, v*invT)
	}
	var s float64
	for _, v := range logits {
		s += math.Exp(v*invT - mx)
	}
	lse := mx + math.Log(s)
	out := make([]float64, len(logits))
	for i, v := range logits {
		out[i] = v*invT - lse
	}
	return out
}
