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
		run := func(procs int) (*ForwardResult, [][]float32) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			tr := mustTrainer(t, m, LoRAConfig{Rank: 2, TrainAttn: true, TrainUnembed: true, Seed: 1})
			randomizeB(t, tr, 2, 0.05)
			res, err := tr.ForwardBackward(context.Background(), loss, data)
			if err != nil {
				t.Fatal(err)
			}
			return res, gradBits(tr)
		}
		r1, g1 := run(1)
		r3, g3 := run(3)
		if !reflect.DeepEqual(r1, r3) {
			t.Fatalf("%s: outputs differ between 1 and 3 goroutines", name)
		}
		for i := range g1 {
			if !slices.Equal(g1[i], g3[i]) {
				t.Fatalf("%s: gradients of tensor %d differ between 1 and 3 goroutines", name, i)
			}
		}
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
	run := func(chunk int) (*ForwardResult, [][]float32) {
		defer func(old int) { headChunk = old }(headChunk)
		headChunk = chunk
		tr := mustTrainer(t, m, LoRAConfig{Rank: 2, TrainAttn: true, TrainUnembed: true, Seed: 1})
		randomizeB(t, tr, 2, 0.05)
		res, err := tr.ForwardBackward(context.Background(), loss, data)
		if err != nil {
			t.Fatal(err)
		}
		return res, gradBits(tr)
	}
	r1, g1 := run(headChunk)
	r2, g2 := run(16)
	if !reflect.DeepEqual(r1, r2) {
		t.Fatal("outputs differ between head chunks of 16 positions and of headChunk")
	}
	for i := range g1 {
		if !slices.Equal(g1[i], g2[i]) {
			t.Fatalf("gradients of tensor %d differ between head chunks of 16 positions and of headChunk", i)
		}
	}
}
