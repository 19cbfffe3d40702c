package engine

import (
	"math"
	"runtime"
)

// GPT-OSS attention: a sliding window (a query at position p sees keys
// p-window+1 .. p) and a sink logit per head that joins the softmax's
// denominator only. Such layers run one row at a time (attendRow) in the
// forward pass; their backward pass (attentionBackwardRows) recomputes the
// probabilities with the same kernels, one position and head at a time.

// windowed reports whether layer li needs the per-row attention path.
func (m *Model) windowed(li int) bool {
	return m.cfg.window(li) > 0 || m.sinks(li) != nil
}

// sinks are layer li's sink logits, nil when it has none (also for the
// weightless models of the attention kernels' tests).
func (m *Model) sinks(li int) []float32 {
	if m.w == nil || li >= len(m.w.layers) {
		return nil
	}
	return m.w.layers[li].sinks
}

// firstKey is the first position a query at pos sees in layer li.
func (c Config) firstKey(li, pos int) int {
	if w := c.window(li); w > 0 {
		return max(0, pos-w+1)
	}
	return 0
}

// softmaxSink replaces the scores sc by their softmax with an extra
// logit sink in the denominator (no sink: softmax32's bits): numerators
// float32(exp64(s − max)), the sum in float64 in ascending order with the
// sink's term last, each numerator times the float32 reciprocal.
func softmaxSink(sc []float32, sinks []float32, h int) {
	if sinks == nil {
		softmax32(sc)
		return
	}
	sink := sinks[h]
	mx := sink
	for _, s := range sc {
		mx = max(mx, s)
	}
	expShift32(sc, mx)
	normalise(sc, float64(float32(exp64(float64(sink-mx)))))
}

// attentionBackwardRows is attentionBackward for a windowed or sink layer
// li: the gradients of q, k and v (after rotary) from datt, each
// probability recomputed as the forward pass computed it. KV heads are
// split across goroutines; each dk and dv element adds its terms in
// ascending (position, head) order.
func attentionBackwardRows(c Config, li int, sinks []float32, q [][]float32, k, v []float32, datt, dq, dk, dv [][]float32) {
	n := len(q)
	workers := min(runtime.GOMAXPROCS(0), c.KVHeads, max(1, n*n*c.Heads*c.HeadDim/parallelMinWork))
	forkJoin(workers, func(wk int) {
		sc := make([]float32, n)
		dp := make([]float64, n)
		for kvh := wk; kvh < c.KVHeads; kvh += workers {
			for p := range n {
				for g := range c.Heads / c.KVHeads {
					attnRowBackward(c, li, sinks, kvh, g, p, q, k, v, datt, dq, dk, dv, sc, dp)
				}
			}
		}
	})
}

// attnRowBackward adds query head (kvh, g) at position p's terms.
func attnRowBackward(c Config, li int, sinks []float32, kvh, g, p int, q [][]float32, k, v []float32, datt, dq, dk, dv [][]float32, sc []float32, dp []float64) {
	hd, kvd := c.HeadDim, c.KVHeads*c.HeadDim
	h, off, lo := kvh*(c.Heads/c.KVHeads)+g, kvh*hd, c.firstKey(li, p)
	s := sc[:p+1-lo]
	qh, da := q[p][h*hd:(h+1)*hd], datt[p][h*hd:(h+1)*hd]
	scale := float32(1 / math.Sqrt(float64(hd)))
	attnDots(s, qh, k[lo*kvd:], kvd, off)
	scaleScores(s, scale)
	softmaxSink(s, sinks, h)
	var sum float64 // Σ_t P_t·dP_t
	for t := range s {
		dp[t] = dot64(da, v[(lo+t)*kvd+off:(lo+t)*kvd+off+hd])
		sum += float64(float64(s[t]) * dp[t]) // the conversion keeps the product from fusing into an FMA
	}
	dqh := dq[p][h*hd : (h+1)*hd]
	for t, pt := range s {
		ds := float32(float64(pt) * (dp[t] - sum) * float64(scale))
		kt, dkt := k[(lo+t)*kvd+off:(lo+t)*kvd+off+hd], dk[lo+t][off:off+hd]
		dvt := dv[lo+t][off : off+hd]
		for i := range hd { // conversions: no FMA, the same bits on every machine
			dqh[i] += float32(ds * kt[i])
			dkt[i] += float32(ds * qh[i])
			dvt[i] += float32(pt * da[i])
		}
	}
}
