package engine

// Recomputed activations. A forward_backward datum normally keeps every
// layer's activations (layerSizes: about 91 KB per token and layer on the
// Qwen3-0.6B shape, 10 GiB for one 4096-token sequence over 28 layers). When that would exceed the trainer's keep limit, the datum
// keeps only each layer's input residual instead and runs each layer's
// forward again just before its backward, one layer at a time: one more
// forward pass (about a third more work, the attention included) for
// memory that grows with layers·tokens·hidden. The recomputed layer runs
// the same kernels on the same inputs, so the gradients have the same bits
// as with everything kept (TestRecomputeMatchesKept); ActivationBytes counts
// the memory of the mode the datum will run in.

// DefaultKeepLimit is the kept-activation size above which a datum
// recomputes its layers: 4 GiB keeps the 0.6B shape's 1 × 1024 tokens and
// the 4-layer shapes' 2048 whole, and puts a 4096-token sequence on the
// 0.6B shape at about 1.15 GB of activations (ActivationBytes).
const DefaultKeepLimit int64 = 4 << 30

// SetKeepLimit sets the kept-activation size (bytes) above which a datum
// keeps only layer inputs and recomputes the rest in its backward pass;
// 0 recomputes always.
func (t *Trainer) SetKeepLimit(bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.keepLimit = bytes
}

// recomputes reports whether a forward_backward datum of n positions
// recomputes its layers.
func (t *Trainer) recomputes(n int) bool {
	return 4*int64(n)*int64(t.layerSizes().kept()) > t.keepLimit
}

// residuals allocates the input residual of every layer after the first
// (x is the first's) and the last layer's output, for a recomputing datum.
func (ps *datumPass) residuals(x [][]float32) [][][]float32 {
	in := make([][][]float32, ps.c.Layers+1)
	in[0] = x
	for i := 1; i < len(in); i++ {
		in[i] = ps.ar.rowsToFill(ps.n, ps.c.Hidden)
	}
	return in
}

// residual returns the buffer layer li writes its output residual into
// when a backward pass follows.
func (ps *datumPass) residual(li int) [][]float32 {
	if ps.inputs != nil {
		return ps.inputs[li+1]
	}
	return ps.ar.rowsToFill(ps.n, ps.c.Hidden)
}

// forwardLayers runs every layer forward from x and returns the last
// layer's output. A recomputing datum frees each layer's activations once
// its output is written.
func (ps *datumPass) forwardLayers(x [][]float32, checkCtx func() error) ([][]float32, error) {
	var spare [][]float32
	if !ps.backward {
		// Without a backward pass nothing needs keeping: each layer's scratch
		// is released once it has written the next residual into spare.
		spare = ps.ar.rows(ps.n, ps.c.Hidden)
	}
	for li := range ps.c.Layers {
		if err := checkCtx(); err != nil {
			return nil, err
		}
		mark := ps.ar.mark()
		x, spare = ps.forwardLayer(li, x, spare)
		if ps.inputs != nil {
			ps.ar.release(mark)
			ps.acts[li] = layerActs{}
		}
	}
	return x, nil
}

// backwardLayers propagates dx down to layer lowest; a recomputing datum
// first runs each layer forward again from its kept input.
func (ps *datumPass) backwardLayers(lowest int, dx [][]float32, checkCtx func() error) error {
	for li := ps.c.Layers - 1; li >= lowest; li-- {
		if err := checkCtx(); err != nil {
			return err
		}
		mark := ps.ar.mark()
		if ps.inputs != nil {
			ps.forwardLayer(li, ps.inputs[li], nil)
		}
		more := ps.backwardLayer(li, lowest, dx)
		if ps.inputs != nil {
			ps.ar.release(mark)
			ps.acts[li] = layerActs{}
		}
		if !more {
			break
		}
	}
	return nil
}
