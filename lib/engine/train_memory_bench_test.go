package engine

import (
	"context"
	"syscall"
	"testing"
)

// BenchmarkTrainMemory reports the memory of one training step
// (forward_backward, rank-32 LoRA on every target, then optim_step) of one
// sequence on a random Qwen3-0.6B-shaped model (float32 weights): the
// process's peak resident set (getrusage's maxrss, which CPU load does not
// disturb), the model's weights, the trainer's fixed state and the
// activations' arena (ActivationBytes, the arena's exact count). Run one
// length per process (-bench 'TrainMemory/^1x4096$'): maxrss is the
// process's peak over its whole life. The wide4 case has the 0.6B widths
// and 4 layers (a seventh of the work, to check the accounting on a busy
// machine).
func BenchmarkTrainMemory(b *testing.B) {
	for _, tc := range []struct {
		name      string
		layers, n int
	}{{"1x2048", 28, 2048}, {"1x4096", 28, 4096}, {"wide4-1x4096", 4, 4096}} {
		b.Run(tc.name, func(b *testing.B) {
			c, n := qwen3Small(), tc.n
			c.Layers = tc.layers
			ts := randomTensors(c, 1)
			m, err := New("qwen3-0.6b-shape", c, ts)
			if err != nil {
				b.Fatal(err)
			}
			var weights int64
			for _, t := range ts {
				weights += 4 * int64(len(t.Data))
			}
			tr := mustTrainer(b, m, LoRAConfig{Rank: 32, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 1})
			loss, _ := NewLoss(LossCrossEntropy, nil)
			data := forLoss(testData(c.VocabSize, 3, n), LossCrossEntropy)
			for b.Loop() {
				if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
					b.Fatal(err)
				}
				if _, err := tr.OptimStep(DefaultAdamParams()); err != nil {
					b.Fatal(err)
				}
			}
			var ru syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			const mb = 1 << 20
			b.ReportMetric(float64(ru.Maxrss*1024)/mb, "peak-RSS-MiB")
			b.ReportMetric(float64(weights)/mb, "weights-MiB")
			b.ReportMetric(float64(tr.StateBytes())/mb, "state-MiB")
			b.ReportMetric(float64(tr.ActivationBytes([]int{n}, true))/mb, "activations-MiB")
			b.ReportMetric(float64(4*tr.ar.peak)/mb, "arena-peak-MiB")
		})
	}
}
