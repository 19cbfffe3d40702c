package engine

import (
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
)

// Training through mixture-of-experts layers. The forward keeps, per
// datum, the router logits, the routing, and each expert's activations
// for the positions routed to it (n·k rows in all, expert after expert);
// the backward propagates to the experts' adapters, through the routing
// weights and the router's softmax to the layer's input (the router
// itself is frozen), and each sum runs in one fixed order: experts
// ascending, positions ascending within one.

// expertTrain is one expert's adapted matrices (views into the layer's
// stacked parameters; the shared factor's view is the parameter itself).
type expertTrain struct{ gate, up, down *trainModule }

func (e *expertTrain) slot(which int) **trainModule {
	return [...]**trainModule{&e.gate, &e.up, &e.down}[which]
}

// shape is the parameter's tensor shape as PEFT stores it.
func (p *param) shape() []int {
	if p.experts > 0 {
		return []int{p.experts, p.rows / p.experts, p.cols}
	}
	return []int{p.rows, p.cols}
}

// view is expert e's slice of a stacked parameter: its value and the
// datum's gradient, which is all a module's forward and backward touch.
// A shared factor (one slice) is its own view, so every expert's backward
// adds into the one gradient, in the order moeBackward visits the
// experts (ascending) and, within one, the rows (ascending).
func (p *param) view(e int) *param {
	if p.experts == 1 {
		return p
	}
	rows := p.rows / p.experts
	lo, hi := e*rows*p.cols, (e+1)*rows*p.cols
	return &param{name: p.name, rows: rows, cols: p.cols, isB: p.isB, w: p.w[lo:hi], local: p.local[lo:hi]}
}

// addExperts adds the stacked expert adapters of the layer with prefix p
// (w1, w2, w3 in lib/peft's order) in the shared-outer form (moe_lora.go):
// lora_A initialised as a fresh checkpoint's, lora_B zero.
func (t *Trainer) addExperts(p string, tl *trainLayer, ll *loraLayer) {
	c, r := t.base.cfg, t.cfg.Rank
	E := c.Experts
	tl.experts, ll.experts = make([]expertTrain, E), make([]expertLoRA, E)
	for _, kind := range []struct {
		name  string
		which int
	}{{"w1", 0}, {"w2", 2}, {"w3", 1}} {
		in, out := expertDims(c, kind.which)
		nA, nB := E, 1
		if sharedA(kind.which) {
			nA, nB = 1, E
		}
		path := "base_model.model." + p + "mlp.experts." + kind.name
		a, b := newParam(path+".lora_A.weight", nA*r, in, false), newParam(path+".lora_B.weight", nB*out, r, true)
		a.experts, b.experts = nA, nB
		next := peft.InitA(t.cfg.Seed, a.name, in)
		for i := range a.w {
			a.w[i] = next()
		}
		t.params = append(t.params, a, b)
		fa := expertFactor{data: a.w, n: nA, rows: r, cols: in}
		fb := expertFactor{data: make([]float32, nB*out*r), n: nB, rows: out, cols: r} // scale·B, kept by syncScaled
		for e := range E {
			pair := &loraPair{a: fa.slice(e), b: fb.slice(e)}
			*ll.experts[e].slot(kind.which) = pair
			*tl.experts[e].slot(kind.which) = &trainModule{a: a.view(e), b: b.view(e), pair: pair}
		}
	}
}

// moeActs are a mixture-of-experts layer's kept activations.
type moeActs struct {
	logits     [][]float32 // router logits, per position
	sel        []int       // n·k chosen experts
	wts        []float32   // their routing weights
	groups     []moeGroup
	xs         [][][]float32  // per group, its positions' normalised inputs (rows of xn2)
	g, u, h, y [][]float32    // n·k rows, group after group: gate, up, silu(g)·u, expert output
	t          [3][][]float32 // the adapters' A·x for gate, up, down (nil when not trained)
}

// part returns a group's rows of an n·k slab (nil stays nil).
func part(rows [][]float32, off, n int) [][]float32 {
	if rows == nil {
		return nil
	}
	return rows[off : off+n]
}

// moeForward adds layer li's mixture-of-experts output (of xn2) to next,
// which holds the residual, keeping the activations in ps.acts[li].moe.
func (ps *datumPass) moeForward(li int, next [][]float32) {
	t, c, ar, n := ps.t, ps.c, ps.ar, ps.n
	mw, a := t.model.w.layers[li].moe, &ps.acts[li]
	k, nk, mi := c.ExpertsPerToken, ps.n*c.ExpertsPerToken, c.MoEIntermediate
	ma := &moeActs{logits: ar.rowsToFill(n, c.Experts), sel: make([]int, nk), wts: make([]float32, nk)}
	a.moe = ma
	mw.routerLogits(a.xn2, ma.logits)
	probs := make([]float64, c.Experts)
	for p := range n {
		route(c, mw.scoreBias, ma.logits[p], ma.sel[p*k:(p+1)*k], ma.wts[p*k:(p+1)*k], probs)
	}
	ma.groups = groupByExpert(c.Experts, k, ma.sel)
	ma.g, ma.u, ma.h, ma.y = ar.rowsToFill(nk, mi), ar.rowsToFill(nk, mi), ar.rowsToFill(nk, mi), ar.rowsToFill(nk, c.Hidden)
	ets := t.layers[li].experts
	if ets != nil {
		for w := range ma.t {
			ma.t[w] = ar.rows(nk, t.cfg.Rank)
		}
	}
	out := ar.rows(n, c.Hidden)
	off := 0
	for _, gr := range ma.groups {
		nr, ew := len(gr.rows), &mw.experts[gr.expert]
		xs := make([][]float32, nr)
		for b, p := range gr.rows {
			xs[b] = a.xn2[p]
		}
		ma.xs = append(ma.xs, xs)
		var et expertTrain
		if ets != nil {
			et = ets[gr.expert]
		}
		g, u, h, y := part(ma.g, off, nr), part(ma.u, off, nr), part(ma.h, off, nr), part(ma.y, off, nr)
		trainLinear(ew.gate, ew.gateBias, et.gate, xs, g, part(ma.t[0], off, nr), false)
		trainLinear(ew.up, ew.upBias, et.up, xs, u, part(ma.t[1], off, nr), false)
		for b := range h {
			c.expertAct(h[b], g[b], u[b])
		}
		trainLinear(ew.down, ew.downBias, et.down, h, y, part(ma.t[2], off, nr), false)
		for b, p := range gr.rows {
			axpy(out[p], ma.wts[gr.slots[b]], y[b])
		}
		off += nr
	}
	for p := range n {
		putRow(next[p], out[p], true)
	}
}

// moeBackward takes dx, the gradient of layer li's output residual, and
// returns the gradient of the MLP's input xn2, accumulating the experts'
// adapter gradients on the way.
func (ps *datumPass) moeBackward(li int, dx [][]float32) [][]float32 {
	t, c, ar, n := ps.t, ps.c, ps.ar, ps.n
	mw, ma := t.model.w.layers[li].moe, ps.acts[li].moe
	k, nk, mi := c.ExpertsPerToken, ps.n*c.ExpertsPerToken, c.MoEIntermediate
	dxn := ar.rows(n, c.Hidden)
	dy, dg, du := ar.rowsToFill(nk, c.Hidden), ar.rowsToFill(nk, mi), ar.rowsToFill(nk, mi)
	dw := make([]float64, nk) // gradient of each routing weight
	ets := t.layers[li].experts
	off := 0
	for gi, gr := range ma.groups {
		nr, ew := len(gr.rows), &mw.experts[gr.expert]
		var et expertTrain
		if ets != nil {
			et = ets[gr.expert]
		}
		dxs := make([][]float32, nr)
		for b, p := range gr.rows {
			s := gr.slots[b]
			dw[s] = dot64(dx[p], ma.y[off+b])
			for j, v := range dx[p] {
				dy[off+b][j] = ma.wts[s] * v
			}
			dxs[b] = dxn[p]
		}
		gdg, gdu := part(dg, off, nr), part(du, off, nr)
		ps.linearBackward(ew.down, et.down, part(ma.h, off, nr), part(ma.t[2], off, nr), part(dy, off, nr), gdg, false)
		for b := range gdg {
			c.expertActBackward(gdg[b], gdu[b], ma.g[off+b], ma.u[off+b])
		}
		ps.linearBackward(ew.gate, et.gate, ma.xs[gi], part(ma.t[0], off, nr), gdg, dxs, true)
		ps.linearBackward(ew.up, et.up, ma.xs[gi], part(ma.t[1], off, nr), gdu, dxs, true)
		off += nr
	}
	dlog := ar.rowsToFill(n, c.Experts)
	probs := make([]float64, c.Experts)
	for p := range n {
		routeBackward(c, ma.logits[p], ma.sel[p*k:(p+1)*k], dw[p*k:(p+1)*k], probs, dlog[p])
	}
	matMulT(mw.router, dlog, dxn, true)
	return dxn
}

// dot64 is Σ a[i]·b[i] in float64, in ascending i.
func dot64(a, b []float32) float64 {
	var s float64
	for i, v := range a {
		s += float64(float64(v) * float64(b[i])) // no FMA: the same bits everywhere
	}
	return s
}

// routeBackward writes into dlog the gradient of one position's router
// logits given dw, that of the routing weights of its experts sel.
// probs is scratch for the softmax over all experts.
func routeBackward(c Config, logits []float32, sel []int, dw, probs []float64, dlog []float32) {
	if c.Routing != nil {
		groupedBackward(c, logits, sel, dw, dlog)
		return
	}
	if c.Family == models.GptOss {
		topKSoftmaxBackward(logits, sel, dw, dlog)
		return
	}
	routerProbs(logits, probs)
	dp := make([]float64, len(sel)) // gradient of the selected probabilities
	copy(dp, dw)
	if c.NormTopKProb {
		// w_j = p_j / Σ_S p: dp_j = (dw_j − Σ_i dw_i·w_i) / Σ_S p.
		var kept, dot float64
		for _, e := range sel {
			kept += probs[e]
		}
		for j, e := range sel {
			dot += float64(dw[j] * probs[e] / kept)
		}
		for j := range dp {
			dp[j] = (dw[j] - dot) / kept
		}
	}
	// Softmax: dl_i = p_i·(dp_i − Σ_j p_j·dp_j), dp zero off the selection.
	var s float64
	for j, e := range sel {
		s += float64(probs[e] * dp[j])
	}
	for i, p := range probs {
		dlog[i] = float32(-p * s)
	}
	for j, e := range sel {
		dlog[e] = float32(probs[e] * (dp[j] - s))
	}
}

// moeFloats is what a mixture-of-experts layer takes from the arena per
// position (ActivationBytes): kept for the backward pass (router logits;
// each of the k experts' gate, up, silu(g)·u, output and, when mlp is 1,
// adapters' A·x; the weighted sum), and the backward's scratch (the
// input's gradient, the outputs', gate's and up's per expert, the
// adapters' gradients of A·x, the router logits').
func moeFloats(c Config, r, mlp int) (kept, grad int) {
	k, mi, h, e := c.ExpertsPerToken, c.MoEIntermediate, c.Hidden, c.Experts
	kept = e + k*(3*mi+h) + mlp*3*k*r + h
	grad = h + k*h + 2*k*mi + mlp*3*k*r + e
	return kept, grad
}

// topKSoftmaxBackward is routeBackward for GPT-OSS's routing, w =
// softmax(logits[sel]): dl_j = w_j·(dw_j − Σ_k w_k·dw_k) on the
// selection, zero elsewhere.
func topKSoftmaxBackward(logits []float32, sel []int, dw []float64, dlog []float32) {
	wts := make([]float32, len(sel))
	routeTopKSoftmax(logits, append([]int(nil), sel...), wts)
	var s float64
	for j := range sel {
		s += float64(float64(wts[j]) * dw[j])
	}
	clear(dlog)
	for j, e := range sel {
		dlog[e] = float32(float64(wts[j]) * (dw[j] - s))
	}
}
