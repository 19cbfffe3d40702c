package engine

import "testing"

// The activation budget of the Qwen3-0.6B shape with rank-32 LoRA on every
// target (the arena a step takes: ActivationBytes, exact by
// TestActivationBytes), without loading its weights: each layer keeps
// 22,752 floats per token (the figure docs/training.md breaks down), a
// 4096-token sequence recomputes its layers in at most 1.1 GiB, so with
// the 2.3 GiB of float32 weights and 0.6 GiB of trainer state the step
// fits in 8 GB (make bench-engine-memory measures it), and past the keep
// limit the arena grows linearly with the length: nothing of size T².
func TestActivationBudget(t *testing.T) {
	tr := &Trainer{base: &Model{cfg: qwen3Small()}, keepLimit: DefaultKeepLimit,
		cfg: LoRAConfig{Rank: 32, TrainAttn: true, TrainMLP: true, TrainUnembed: true}}
	layers := tr.base.cfg.Layers
	if got := tr.layerSizes().kept(); got != 22752*layers {
		t.Errorf("each layer keeps %d floats per token, want 22,752", got/layers)
	}
	if tr.recomputes(1024) || !tr.recomputes(2048) {
		t.Errorf("keeps 1 × 1024: %v, recomputes 1 × 2048: %v; want both", !tr.recomputes(1024), tr.recomputes(2048))
	}
	const gib = 1 << 30
	if got := tr.ActivationBytes([]int{4096}, true); got > 11*gib/10 {
		t.Errorf("one 4096-token sequence takes %.2f GiB of activations, over the 1.1 GiB budget", float64(got)/gib)
	}
	for _, n := range []int{4096, 8192, 16384} {
		one, two := tr.ActivationBytes([]int{n}, true), tr.ActivationBytes([]int{2 * n}, true)
		if two > 2*one {
			t.Errorf("activations grow faster than the length: %d bytes at %d tokens, %d at %d", one, n, two, 2*n)
		}
	}
}
