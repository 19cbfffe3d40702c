package engine

import (
	"context"
	"runtime"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// A training step's working memory comes from the trainer's arena and the
// kernels' pools, so after a first step a second one allocates little from
// the heap: garbage there lets the collector grow peak RSS up to twice the
// live heap (GOGC=100), as 40 KiB per attention call once did at 4096
// tokens. The model has 64-wide heads and 256 positions, so the AVX-512
// attention tiles run where the CPU has them.
func TestTrainStepGarbageBounded(t *testing.T) {
	c := smallConfig(models.Qwen3)
	c.Hidden, c.Intermediate, c.Heads, c.KVHeads, c.HeadDim, c.MaxPositionEmbeddings = 128, 192, 2, 1, 64, 512
	m, err := New("garbage", c, randomTensors(c, 5))
	if err != nil {
		t.Fatal(err)
	}
	tr := mustTrainer(t, m, LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, Seed: 1})
	loss, _ := NewLoss(LossCrossEntropy, nil)
	data := forLoss(testData(c.VocabSize, 3, 256, 200), LossCrossEntropy)
	step := func() {
		if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
			t.Fatal(err)
		}
	}
	step()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	step()
	runtime.ReadMemStats(&after)
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("second step: %d bytes in %d allocations", got, after.Mallocs-before.Mallocs)
	// Measured: 5.8 MB (results, per-datum scratch growth, closures);
	// with the attention buffers that escaped, 19.6 MB.
	if limit := uint64(10 << 20); got > limit {
		t.Fatalf("a step over 456 tokens allocated %d bytes from the heap (limit %d): look for a buffer that escapes (go build -gcflags=-m)", got, limit)
	}
}
