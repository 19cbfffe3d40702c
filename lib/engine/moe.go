package engine

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tinkershell/tinker/lib/lazyre"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// Mixture-of-experts layers (Qwen3-MoE). A router (mlp.gate, [experts,
// hidden], never adapted) scores every expert for a token; the softmax of
// the scores over all experts gives probabilities, the ExpertsPerToken
// largest are kept (ties to the lower index) and, with norm_topk_prob,
// renormalised to sum to 1. The layer's output is the weighted sum of the
// kept experts' SwiGLU MLPs (mlp.experts.{e}.{gate,up,down}_proj).
//
// Batch invariance holds as for dense layers: the rows routed to an
// expert run through its matrices as one product, whose every element is
// summed in an order fixed by the shapes alone, and each row adds its
// experts' weighted outputs in ascending expert order into a zeroed sum
// that then joins the residual. So a row's bits do not depend on which
// other rows share its experts.

// moeWeights are one mixture-of-experts layer's router and experts.
type moeWeights struct {
	router     mat // [experts, hidden]
	routerBias []float32
	scoreBias  []float32 // DeepSeek's e_score_correction_bias: added to the scores for choosing only
	experts    []expertWeights
}

// expertWeights is one expert's gated MLP (biases: GPT-OSS only).
type expertWeights struct {
	gate, up, down             mat
	gateBias, upBias, downBias []float32
}

// modExpert is the first module number of the experts (LoRA.pair): expert
// e's gate (w1), up (w3) and down (w2) are modExpert+3e+0, +1 and +2.
const modExpert = modDown + 1

// expertModule is the LoRA.pair module of expert e's matrix which (0 gate,
// 1 up, 2 down).
func expertModule(e, which int) int { return modExpert + 3*e + which }

// expertName is the Hugging Face name of expert e's matrix proj in layer
// prefix p ("model.layers.0.").
func expertName(p string, e int, proj string) string {
	return fmt.Sprintf("%smlp.experts.%d.%s.weight", p, e, proj)
}

// buildMoE arranges layer prefix p's router and experts.
func buildMoE(c Config, p string, getMat func(string, int, int) (mat, error), getVec func(string, int) ([]float32, error)) (*moeWeights, error) {
	mw := &moeWeights{experts: make([]expertWeights, c.Experts)}
	var err error
	if mw.router, err = getMat(p+routerName(c), c.Experts, c.Hidden); err != nil {
		return nil, err
	}
	if c.Family == models.GptOss {
		if err := gptOssBiases(c, p, mw, getVec); err != nil {
			return nil, err
		}
	}
	for e := range mw.experts {
		ew := &mw.experts[e]
		if ew.gate, err = getMat(expertName(p, e, "gate_proj"), c.MoEIntermediate, c.Hidden); err != nil {
			return nil, err
		}
		if ew.up, err = getMat(expertName(p, e, "up_proj"), c.MoEIntermediate, c.Hidden); err != nil {
			return nil, err
		}
		if ew.down, err = getMat(expertName(p, e, "down_proj"), c.Hidden, c.MoEIntermediate); err != nil {
			return nil, err
		}
	}
	return mw, nil
}

// moeShapes adds a mixture-of-experts layer's tensors to s.
func moeShapes(c Config, p string, s map[string][]int) {
	s[p+routerName(c)] = []int{c.Experts, c.Hidden}
	for e := range c.Experts {
		s[expertName(p, e, "gate_proj")] = []int{c.MoEIntermediate, c.Hidden}
		s[expertName(p, e, "up_proj")] = []int{c.MoEIntermediate, c.Hidden}
		s[expertName(p, e, "down_proj")] = []int{c.Hidden, c.MoEIntermediate}
	}
	if c.Family == models.GptOss {
		gptOssShapes(c, p, s)
	}
}

// routerName is the router's tensor name within a layer.
func routerName(c Config) string {
	if c.Family == models.GptOss {
		return "mlp.router.weight"
	}
	return "mlp.gate.weight"
}

// route picks a token's experts from its router logits: sel gets the
// ExpertsPerToken chosen experts in ascending order and wts their routing
// weights; probs is scratch for the softmax over all experts. Everything is float64 with the engine's exp64,
// so the choice is the same on every path and machine.
func route(c Config, scoreBias, logits []float32, sel []int, wts []float32, probs []float64) {
	if c.Routing != nil {
		routeGrouped(c, scoreBias, logits, sel, wts, probs)
		return
	}
	if c.Family == models.GptOss {
		routeTopKSoftmax(logits, sel, wts)
		return
	}
	routerProbs(logits, probs)
	routeTopK(logits, sel)
	var kept float64
	for _, e := range sel {
		kept += probs[e]
	}
	for j, e := range sel {
		w := probs[e]
		if c.NormTopKProb {
			w /= kept
		}
		wts[j] = float32(w)
	}
}

// routeTopKSoftmax is GPT-OSS's routing: the top-k logits, softmaxed
// among themselves (float64, exp64), into wts.
func routeTopKSoftmax(logits []float32, sel []int, wts []float32) {
	routeTopK(logits, sel)
	mx := math.Inf(-1)
	for _, e := range sel {
		mx = max(mx, float64(logits[e]))
	}
	var sum float64
	ex := make([]float64, len(sel))
	for j, e := range sel {
		ex[j] = exp64(float64(logits[e]) - mx)
		sum += ex[j]
	}
	for j := range sel {
		wts[j] = float32(ex[j] / sum)
	}
}

// routerLogits computes the router's logits of the rows xs (plus its bias).
func (mw *moeWeights) routerLogits(xs, logits [][]float32) {
	matMul(mw.router, xs, logits, false)
	if mw.routerBias != nil {
		for _, l := range logits[:len(xs)] {
			for j, b := range mw.routerBias {
				l[j] += b
			}
		}
	}
}

// expertAct is the experts' gated activation h = act(g, u) (h may alias g).
func (c Config) expertAct(h, g, u []float32) {
	if c.Family == models.GptOss {
		gptOssAct(c.SwigluLimit, h, g, u)
		return
	}
	siluMul(h, g, u)
}

// expertActBackward turns dh (in dg) into the gradients of g and u.
func (c Config) expertActBackward(dg, du, g, u []float32) {
	if c.Family == models.GptOss {
		gptOssActBackward(c.SwigluLimit, dg, du, g, u)
		return
	}
	siluMulBackward(dg, du, g, u)
}

// routerProbs writes the softmax of logits into probs.
func routerProbs(logits []float32, probs []float64) {
	mx := math.Inf(-1)
	for _, l := range logits {
		mx = max(mx, float64(l))
	}
	var sum float64
	for i, l := range logits {
		probs[i] = exp64(float64(l) - mx)
		sum += probs[i]
	}
	for i := range probs {
		probs[i] /= sum
	}
}

// routeTopK writes the indices of the len(sel) largest values of xs into sel in
// ascending index order; of equal values the lower index wins.
func routeTopK[T float32 | float64](xs []T, sel []int) {
	k := len(sel)
	for j := range k {
		best := -1
		for i, x := range xs {
			if taken(sel[:j], i) {
				continue
			}
			if best < 0 || x > xs[best] {
				best = i
			}
		}
		sel[j] = best
	}
	// Insertion sort: k is small (8 for Qwen3-30B-A3B).
	for j := 1; j < k; j++ {
		for i := j; i > 0 && sel[i] < sel[i-1]; i-- {
			sel[i], sel[i-1] = sel[i-1], sel[i]
		}
	}
}

func taken(sel []int, i int) bool {
	for _, s := range sel {
		if s == i {
			return true
		}
	}
	return false
}

// moeGroup is the rows routed to one expert: their indices in the batch
// and, for each, the slot j of the expert in that row's selection.
type moeGroup struct {
	expert int
	rows   []int
	slots  []int // index into the routing arrays: row·k + j
}

// groupByExpert lists, in ascending expert order, the rows each expert
// serves (rows in ascending order), from n rows' selections sel (n·k).
func groupByExpert(experts, k int, sel []int) []moeGroup {
	byExpert := make([]moeGroup, experts)
	for s, e := range sel {
		g := &byExpert[e]
		g.rows, g.slots = append(g.rows, s/k), append(g.slots, s)
	}
	groups := byExpert[:0]
	for e, g := range byExpert {
		if len(g.rows) > 0 {
			g.expert = e
			groups = append(groups, g)
		}
	}
	return groups
}

// moeScratch is the sampling forward's room for the experts.
type moeScratch struct {
	logits, out, g, u, y [][]float32
	sel                  []int
	wts                  []float32
	probs                []float64
	xs                   [][]float32
	loras                []*LoRA
}

// moeMLP adds layer li's mixture-of-experts output for the normalised
// rows xn to the residual rows x.
func (m *Model) moeMLP(ws *workspace, li int, xn, x [][]float32) {
	c, mw, s := m.cfg, m.w.layers[li].moe, &ws.moe
	n, k := len(xn), c.ExpertsPerToken
	s.logits = grow(s.logits, n, c.Experts)
	s.out = grow(s.out, n, c.Hidden)
	s.g, s.u = grow(s.g, n, c.MoEIntermediate), grow(s.u, n, c.MoEIntermediate)
	s.y = grow(s.y, n, c.Hidden)
	s.sel, s.wts = growTo(s.sel, n*k)[:n*k], growTo(s.wts, n*k)[:n*k]
	s.probs = growTo(s.probs, c.Experts)[:c.Experts]
	mw.routerLogits(xn, s.logits)
	for i := range n {
		route(c, mw.scoreBias, s.logits[i], s.sel[i*k:(i+1)*k], s.wts[i*k:(i+1)*k], s.probs)
		clear(s.out[i])
	}
	for _, gr := range groupByExpert(c.Experts, k, s.sel) {
		ew, nr := &mw.experts[gr.expert], len(gr.rows)
		s.xs, s.loras = s.xs[:0], s.loras[:0]
		for _, i := range gr.rows {
			s.xs, s.loras = append(s.xs, xn[i]), append(s.loras, ws.loras[i])
		}
		g, u, y := s.g[:nr], s.u[:nr], s.y[:nr]
		m.linear(ws, ew.gate, ew.gateBias, s.loras, li, expertModule(gr.expert, 0), s.xs, g, false)
		m.linear(ws, ew.up, ew.upBias, s.loras, li, expertModule(gr.expert, 1), s.xs, u, false)
		for b := range g {
			c.expertAct(g[b], g[b], u[b])
		}
		m.linear(ws, ew.down, ew.downBias, s.loras, li, expertModule(gr.expert, 2), g, y, false)
		for b, i := range gr.rows {
			axpy(s.out[i], s.wts[gr.slots[b]], y[b])
		}
	}
	for i := range n {
		putRow(x[i], s.out[i], true)
	}
}

// fusedExperts matches transformers 5.x's stacked expert parameters:
// mlp.experts.gate_up_proj [experts, 2·moe_inter, hidden] (each expert's
// gate rows, then its up rows) and mlp.experts.down_proj [experts,
// hidden, moe_inter]. Checkpoints on the Hub keep 4.x's per-expert
// tensors; a directory saved by transformers 5.x has these.
var fusedExperts = lazyre.New(`^(model\.layers\.\d+\.mlp\.experts\.)(gate_up_proj|down_proj)$`)

// splitFusedExperts adds the per-expert tensors of one fused expert
// parameter to ts, named as transformers 4.x names them (the tensor's
// shape is checked against the config when the model is built);
// bfloat16 stays bfloat16 when keepBF16, as other matrices do. Each
// expert's gate, up and down rows are contiguous in the fused tensor, so
// the fused tensor is converted once, straight into the load's slab
// (hugeSlab; nil: the heap), and the experts' matrices are slices of
// it: no float32 copy of the whole is made on the way to bfloat16.
func splitFusedExperts(st *safetensors.Tensor, ts Tensors, keepBF16 bool, slab *hugeSlab) error {
	m := fusedExperts.FindStringSubmatch(st.Name)
	if len(st.Shape) != 3 || (m[2] == "gate_up_proj" && st.Shape[1]%2 != 0) {
		return fmt.Errorf("fused expert tensor %s has shape %v, want [experts, rows, cols] with even rows for gate_up_proj", st.Name, st.Shape)
	}
	experts, rows, cols := int(st.Shape[0]), int(st.Shape[1]), int(st.Shape[2])
	n := experts * rows * cols
	var f32 []float32
	var bf []uint16
	if keepBF16 && st.DType == safetensors.BF16 {
		if len(st.Data) != 2*n {
			return fmt.Errorf("tensor %s: %d data bytes do not match shape %v of %s", st.Name, len(st.Data), st.Shape, st.DType)
		}
		bf = hugeSlabAlloc[uint16](slab, n)
		for i := range bf {
			// The bits as stored, a NaN made quiet as widening to
			// float32 and rounding back did before.
			b := binary.LittleEndian.Uint16(st.Data[2*i:])
			if b&0x7fff > 0x7f80 {
				b |= 0x40
			}
			bf[i] = b
		}
	} else {
		f32 = hugeSlabAlloc[float32](slab, n)
		if slab == nil {
			adviseHuge(f32)
		}
		if err := st.Float32Into(f32); err != nil {
			return err
		}
	}
	// mk is rows [lo, lo+r) of the fused tensor as one matrix, capped so
	// that no append reaches the next.
	mk := func(lo, r int) Tensor {
		a, b := lo*cols, (lo+r)*cols
		if bf != nil {
			return Tensor{Shape: []int{r, cols}, BF16: bf[a:b:b]}
		}
		return Tensor{Shape: []int{r, cols}, Data: f32[a:b:b]}
	}
	for e := range experts {
		p := m[1] + fmt.Sprint(e) + "."
		if m[2] == "down_proj" {
			ts[p+"down_proj.weight"] = mk(e*rows, rows)
			continue
		}
		half := rows / 2
		ts[p+"gate_proj.weight"] = mk(e*rows, half)
		ts[p+"up_proj.weight"] = mk(e*rows+half, half)
	}
	return nil
}
