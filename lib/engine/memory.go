package engine

import "slices"

// ActivationBytes is the scratch memory one forward (backward false) or
// forward_backward call over datums of these lengths needs on top of the
// trainer's fixed state (StateBytes) when the datums run one at a time, so
// it is the need of the longest (a group of datums batched in one pass
// takes at most that of their summed lengths: groupBytes; CallBytes says
// what a call takes). It counts every float32 buffer of the pass (for
// forward_backward the activations of every layer, or past the keep limit
// every layer's input and one layer's activations, one layer's gradients
// and a chunk of logits; forward keeps one layer at a time), so the server
// can refuse a request over its budget before allocating anything, and the
// trainer allocates its arena from it.
func (t *Trainer) ActivationBytes(lengths []int, backward bool) int64 {
	n := 0
	for _, l := range lengths {
		n = max(n, l)
	}
	c := t.base.cfg
	h, qd, kvd, hd := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim, c.HeadDim
	r := t.cfg.Rank
	attn, mlp, head, qwen := b2i(t.cfg.TrainAttn), b2i(t.cfg.TrainMLP), b2i(t.cfg.TrainUnembed), b2i(c.hasQKNorm())
	ls := t.layerSizes()
	maxKept := slices.Max(ls.mlpKept)
	logits := headChunkRows(n, c.VocabSize) * c.VocabSize
	headFixed := n * (h + head*r) // the final norm's output, the head's A·x
	if !backward {
		// One layer's scratch at a time (the residual alternates between two
		// buffers), released before the output layer.
		return 4 * int64(n*(hd+2*h)+max(n*(ls.base-h+maxKept), headFixed+logits))
	}
	headFixed += n * h // dxnF
	// The logits and the head's gradients of A·x are freed before dx and
	// the layers' backward scratch (after) take their place.
	headPart := func(after int) int { return headFixed + max(logits+n*head*r, n*h+after) }
	attnPart := 0
	if attn == 1 || c.Layers > 1 {
		attnPart = n * (2*qd + 2*kvd + qwen*(qd+kvd) + attn*4*r + b2i(c.Layers > 1)*h)
		if c.MLA != nil {
			attnPart = n * (mlaGradFloats(c, r, attn) + b2i(c.Layers > 1)*h)
		}
	}
	grad := func(g int) int { // a layer's backward scratch
		if attn+mlp == 0 {
			return 0
		}
		return max(n*g, attnPart)
	}
	if !t.recomputes(n) {
		return 4 * int64(n*(hd+h)+n*ls.kept()+headPart(grad(slices.Max(ls.mlpGrad))))
	}
	// Every layer's input residual, and one layer's activations at a time
	// (recompute.go): with the head's buffers when a layer runs again for
	// its backward, before them when no layer trains.
	inputs := n*(hd+h) + c.Layers*n*h
	if attn+mlp == 0 {
		return 4 * int64(inputs+max(n*(ls.base-h+maxKept), headPart(0)))
	}
	one := 0
	for li, k := range ls.mlpKept {
		one = max(one, n*(ls.base-h+k)+grad(ls.mlpGrad[li]))
	}
	return 4 * int64(inputs+headPart(one))
}

// layerSizes are the floats per position that the layers keep for the
// backward pass and take as its scratch.
type layerSizes struct {
	// base is what every layer keeps besides its MLP: the residual x,
	// norms, q, k, v, attention output, x2, the next residual, the
	// attention's LoRA products.
	base int
	// mlpKept and mlpGrad are per layer the MLP's (or the experts') kept
	// activations and its backward scratch.
	mlpKept, mlpGrad []int
}

func (t *Trainer) layerSizes() layerSizes {
	c := t.base.cfg
	h, qd, kvd := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	r, mlp := t.cfg.Rank, b2i(t.cfg.TrainMLP)
	ls := layerSizes{base: 4*h + 2*qd + 2*kvd + b2i(c.hasQKNorm())*(qd+kvd) + b2i(t.cfg.TrainAttn)*4*r}
	if c.MLA != nil {
		ls.base = mlaKeptFloats(c, r, b2i(t.cfg.TrainAttn))
	}
	for li := range c.Layers {
		w := c.mlpWidth(li)
		k, g := 3*w+mlp*3*r, 2*w+h+mlp*3*r
		if c.IsMoELayer(li) {
			mk, mg := moeFloats(c, r, mlp)
			k, g = mk+b2i(w > 0)*k, mg+b2i(w > 0)*g
		}
		ls.mlpKept, ls.mlpGrad = append(ls.mlpKept, k), append(ls.mlpGrad, g)
	}
	return ls
}

// kept is what all the layers keep per position.
func (ls layerSizes) kept() int {
	n := len(ls.mlpKept) * ls.base
	for _, k := range ls.mlpKept {
		n += k
	}
	return n
}

func b2i(ok bool) int {
	if ok {
		return 1
	}
	return 0
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
