package engine

import (
	"context"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// The output layer's rows are scored on all cores (scoreRows): with a
// vocabulary large enough to split them, outputs, loss sum and gradients
// have the same bits on 1 and 3 goroutines, for cross_entropy and ppo.
func TestScoreRowsIndependentOfThreads(t *testing.T) {
	c := smallConfig(models.Qwen3)
	c.VocabSize = 6000
	m, err := New("wide-vocab", c, randomTensors(c, 3))
	if err != nil {
		t.Fatal(err)
	}
	if work := 70 * c.VocabSize * 16; work/parallelMinWork < 3 {
		t.Fatalf("%d multiply-adds would not split", work)
	}
	// Under qemu one loss: both score their rows through scoreRows.
	for _, name := range qemuFew([]string{LossCrossEntropy, LossPPO}, []string{LossCrossEntropy}) {
		loss, err := NewLoss(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		data := forLoss(testData(c.VocabSize, 5, 70, 9), name)
		procs := func(n int) func(func()) {
			return func(step func()) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
				step()
			}
		}
		sameHeadStep(t, m, loss, data, name+": 1 and 3 goroutines", procs(1), procs(3))
	}
}

// The output layer runs a datum a chunk of positions at a time: a datum
// longer than a chunk gets the same outputs and gradient bits whatever the
// chunk (the LoRA gradients add each position in ascending order across
// chunks as within one), here 16 positions, 32 (a short last chunk) and
// the default, which takes the whole datum at this vocabulary.
func TestHeadChunkKeepsBits(t *testing.T) {
	c := smallConfig(models.Qwen3)
	c.VocabSize = 3000
	m, err := New("wide-vocab", c, randomTensors(c, 4))
	if err != nil {
		t.Fatal(err)
	}
	loss, _ := NewLoss(LossCrossEntropy, nil)
	data := forLoss(testData(c.VocabSize, 6, 45, 3), LossCrossEntropy)
	if got := headChunkRows(45, c.VocabSize); got != 45 {
		t.Fatalf("the default chunk of a 45-position datum is %d, want the datum", got)
	}
	chunk := func(n int) func(func()) {
		return func(step func()) {
			defer func(rows, bytes int) { headChunk, headBytes = rows, bytes }(headChunk, headBytes)
			headChunk, headBytes = n, 0 // no budget: the chunk is headChunk
			step()
		}
	}
	whole := func(step func()) { step() }
	sameHeadStep(t, m, loss, data, "head chunks of 16 positions and the whole datum", whole, chunk(16))
	sameHeadStep(t, m, loss, data, "head chunks of 32 positions and the whole datum", whole, chunk(32))
}

// The chunk is sized to headBytes of logits in multiples of headChunk
// rows, never fewer than headChunk and never more than the datum: 512
// positions on Qwen3's vocabulary, where the interleaved step A/B decided
// it (docs/engine-training.md, "The output layer's chunk").
func TestHeadChunkRows(t *testing.T) {
	for _, tc := range []struct{ n, vocab, want int }{
		{512, 151936, 512}, {2048, 151936, 512}, {300, 151936, 300}, {4096, 262144, 256},
		{4096, 1 << 20, 128}, {64, 32000, 64}, {8192, 32000, 2560},
	} {
		if got := headChunkRows(tc.n, tc.vocab); got != tc.want {
			t.Errorf("headChunkRows(%d positions, vocabulary %d) = %d, want %d", tc.n, tc.vocab, got, tc.want)
		}
	}
}

// sameHeadStep runs one forward_backward of data on a fresh rank-2
// adapter (attention and output layer, B random) inside each of two
// settings, and requires the same outputs and gradient bits of both.
func sameHeadStep(t *testing.T, m *Model, loss Loss, data []Datum, what string, a, b func(step func())) {
	t.Helper()
	run := func(setting func(func())) (res *ForwardResult, grads [][]float32) {
		setting(func() {
			tr := mustTrainer(t, m, LoRAConfig{Rank: 2, TrainAttn: true, TrainUnembed: true, Seed: 1})
			randomizeB(t, tr, 2, 0.05)
			var err error
			if res, err = tr.ForwardBackward(context.Background(), loss, data); err != nil {
				t.Fatal(err)
			}
			grads = gradBits(tr)
		})
		return res, grads
	}
	r1, g1 := run(a)
	r2, g2 := run(b)
	if !reflect.DeepEqual(r1, r2) {
		t.Fatalf("outputs differ between %s", what)
	}
	for i := range g1 {
		if !slices.Equal(g1[i], g2[i]) {
			t.Fatalf("gradients of tensor %d differ between %s", i, what)
		}
	}
}
