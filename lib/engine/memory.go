package engine

import "github.com/tinkershell/tinker/lib/models"

// ActivationBytes is the scratch memory one forward (backward false) or
// forward_backward call over datums of these lengths needs on top of the
// trainer's fixed state (StateBytes): the datums run one at a time, so it is
// the need of the longest. It counts every float32 buffer of the pass (for
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
	h, qd, kvd, inter, hd := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim, c.Intermediate, c.HeadDim
	r := t.cfg.Rank
	attn, mlp, head, qwen := b2i(t.cfg.TrainAttn), b2i(t.cfg.TrainMLP), b2i(t.cfg.TrainUnembed), b2i(c.Family == models.Qwen3)
	layer := t.layerFloats()
	headPart := n*(h+head*r) + min(n, headChunk)*c.VocabSize
	if !backward {
		// One layer's scratch at a time (the residual alternates between two
		// buffers), released before the output layer.
		return 4 * int64(n*(hd+2*h)+max(n*(layer-h), headPart))
	}
	headPart += n * (h + head*r + h) // dxnF, the head's gradients of A·x, dx
	layerPart := 0                   // one layer's backward scratch
	if attn+mlp > 0 {
		mlpPart := n * (2*inter + h + mlp*3*r)
		attnPart := 0
		if attn == 1 || c.Layers > 1 {
			attnPart = n * (2*qd + 2*kvd + qwen*(qd+kvd) + attn*4*r + b2i(c.Layers > 1)*h)
		}
		layerPart = max(mlpPart, attnPart)
	}
	floats := n*(hd+h) + c.Layers*n*layer + headPart + layerPart
	if t.recomputes(n) {
		// Every layer's input residual, and one layer's activations at a
		// time (recompute.go): with the head's buffers when a layer runs
		// again for its backward, before them when no layer trains.
		floats = n*(hd+h) + c.Layers*n*h + n*(layer-h) + headPart + layerPart
		if attn+mlp == 0 {
			floats = n*(hd+h) + c.Layers*n*h + max(n*(layer-h), headPart)
		}
	}
	return 4 * int64(floats)
}

// layerFloats is how many floats one position of one layer keeps for the
// backward pass (layerActs, the layer's output residual and its KV cache).
func (t *Trainer) layerFloats() int {
	c := t.base.cfg
	h, qd, kvd, inter := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim, c.Intermediate
	r, qwen := t.cfg.Rank, b2i(c.Family == models.Qwen3)
	return 4*h + 2*qd + 2*kvd + 3*inter + qwen*(qd+kvd) + b2i(t.cfg.TrainAttn)*4*r + b2i(t.cfg.TrainMLP)*3*r
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
