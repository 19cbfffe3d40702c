package engine

// GPT-OSS attention: a sliding window (a query at position p sees keys
// p-window+1 .. p) and a sink logit per head that joins the softmax's
// denominator only. Both paths know them: attendRow and the blocked
// forward (attendBlock) start each query at its window and add the sink
// to softmaxSink's denominator; the blocked backward (attnBack.block) does
// the same in softmaxGrad.

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
// exp32(s − max), their sum in float64 (expScores32) with the sink's
// term last, each numerator times the float32 reciprocal.
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
	normalise(sc, expScores32(nil, sc, 1, mx)+float64(exp32(sink-mx)))
}
