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

// The output layer runs headChunk positions at a time: a datum longer
// than a chunk gets the same outputs and gradient bits whatever the chunk
// (the LoRA gradients add each position in ascending order across chunks
// as within one), here 16 positions and the default.
func TestHeadChunkKeepsBits(t *testing.T) {
	c := smallConfig(models.Qwen3)
	c.VocabSize = 3000
	m, err := New("wide-vocab", c, randomTensors(c, 4))
	if err != nil {
		t.Fatal(err)
	}
	loss, _ := NewLoss(LossCrossEntropy, nil)
	data := forLoss(testData(c.VocabSize, 6, 45, 3), LossCrossEntropy)
	chunk := func(n int) func(func()) {
		return func(step func()) {
			defer func(old int) { headChunk = old }(headChunk)
			headChunk = n
			step()
		}
	}
	sameHeadStep(t, m, loss, data, "head chunks of 16 positions and of headChunk", chunk(headChunk), chunk(16))
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
