package engine

// ActivationBytes is the scratch memory one forward (backward false) or
// forward_backward call over datums of these lengths needs on top of the
// trainer's fixed state (StateBytes): the datums run one at a time, so it is
// the need of the longest. It counts every float32 buffer of the pass (for
// forward_backward the activations of every layer, one layer's gradients
// and a chunk of logits; forward keeps one layer at a time), so the server
// can refuse a request over its budget before allocating anything.
func (t *Trainer) ActivationBytes(lengths []int, backward bool) int64 {
	n := 0
	for _, l := range lengths {
		n = max(n, l)
	}
	c := t.base.cfg
	h, qd, kvd, inter, hd := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim, c.Intermediate, c.HeadDim
	r := t.cfg.Rank
	b := func(ok bool) int {
		if ok {
			return 1
		}
		return 0
	}
	attn, mlp, head, qwen := b(t.cfg.TrainAttn), b(t.cfg.TrainMLP), b(t.cfg.TrainUnembed), b(c.hasQKNorm())
	// Per position: a layer's kept activations without the MLP's (the
	// residual x, norms, q, k, v, attention output, x2, next) and, per
	// layer, the MLP's kept activations and its backward scratch.
	base := 4*h + 2*qd + 2*kvd + qwen*(qd+kvd) + attn*4*r
	mlpKept, mlpGrad := 3*inter+mlp*3*r, 2*inter+h+mlp*3*r
	maxKept, maxGrad, kept := 0, 0, 0
	for li := range c.Layers {
		k, g := mlpKept, mlpGrad
		if c.IsMoELayer(li) {
			k, g = moeFloats(c, r, mlp)
		}
		maxKept, maxGrad, kept = max(maxKept, k), max(maxGrad, g), kept+k
	}
	headPart := n*(h+head*r) + min(n, headChunk)*c.VocabSize
	if !backward {
		// One layer's scratch at a time (the residual alternates between two
		// buffers), released before the output layer.
		return 4 * int64(n*(hd+2*h)+max(n*(base-h+maxKept), headPart))
	}
	floats := n*(hd+h) + n*(c.Layers*base+kept) + headPart
	{
		floats += n * (h + head*r + h) // dxnF, the head's gradients of A·x, dx
		if attn+mlp > 0 {
			mlpPart := n * maxGrad
			attnPart := 0
			if attn == 1 || c.Layers > 1 {
				attnPart = n * (2*qd + 2*kvd + qwen*(qd+kvd) + attn*4*r + b(c.Layers > 1)*h)
			}
			floats += max(mlpPart, attnPart)
		}
	}
	return 4 * int64(floats)
}

// StateBytes is the trainer's fixed memory: each adapter value with its
// accumulated gradient, the running call's gradient, the current datum's
// gradient, the two AdamW moments, and the scaled copy of B the forward
// applies.
func (t *Trainer) StateBytes() int64 {
	var n int64
	for _, p := range t.params {
		n += 6 * int64(len(p.w))
		if p.isB {
			n += int64(len(p.w))
		}
	}
	return 4 * n
}
