package engine

import (
	"context"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// A datum that recomputes its layers (keep limit 0) gives the losses,
// logprobs and gradients of one that keeps them, bit for bit, for every
// combination of trained targets, over datums of several lengths in one
// call, on dense, mixture-of-experts, GPT-OSS (window and sink) and
// DeepSeek (latent attention, shared experts) layers,
// starting from an arena full of NaN (so a recomputed layer reading
// memory it did not write would show).
func TestRecomputeMatchesKept(t *testing.T) {
	others := map[models.Family]Config{models.Qwen3MoE: moeConfig(true), models.GptOss: gptOssConfig(), models.DeepSeekV3: dsConfig(true)}
	for _, arch := range []models.Family{models.Llama3, models.Qwen3, models.Qwen3MoE, models.GptOss, models.DeepSeekV3} {
		c, ok := others[arch]
		if !ok {
			c = smallConfig(arch)
		}
		m, err := New("small-"+string(arch), c, randomTensors(c, 3))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []LoRAConfig{{TrainAttn: true, TrainMLP: true, TrainUnembed: true}, {TrainAttn: true}, {TrainMLP: true}, {TrainUnembed: true}} {
			c.Rank, c.Seed = 3, 4
			loss, _ := NewLoss(LossCrossEntropy, nil)
			data := forLoss(testData(m.cfg.VocabSize, 5, 9, 33, 4), LossCrossEntropy)
			run := func(limit int64) (*ForwardResult, [][]float32) {
				tr := mustTrainer(t, m, c)
				randomizeB(t, tr, 1, 0.05)
				tr.SetKeepLimit(limit)
				tr.ar.buf = slices.Repeat([]float32{float32(math.NaN())}, 1<<20)
				fb, err := tr.ForwardBackward(context.Background(), loss, data)
				if err != nil {
					t.Fatal(err)
				}
				if limit == 0 && !tr.recomputes(4) {
					t.Fatal("a keep limit of 0 does not recompute")
				}
				return fb, gradBits(tr)
			}
			fb0, g0 := run(DefaultKeepLimit)
			fb1, g1 := run(0)
			if !reflect.DeepEqual(fb0, fb1) {
				t.Fatalf("%s %+v: outputs differ when recomputing", arch, c)
			}
			for i := range g0 {
				if !slices.Equal(g0[i], g1[i]) {
					t.Fatalf("%s %+v: gradients of tensor %d differ when recomputing", arch, c, i)
				}
			}
		}
	}
}

// Recomputing needs less memory than keeping (ActivationBytes is exact in
// both modes: TestActivationBytes), and the arena is sized before the first
// datum, so that nothing comes from the heap.
func TestRecomputeActivationBytes(t *testing.T) {
	m, _ := smallModel(t, models.Qwen3)
	tr := mustTrainer(t, m, LoRAConfig{Rank: 3, TrainAttn: true, TrainMLP: true, TrainUnembed: true})
	loss, _ := NewLoss(LossCrossEntropy, nil)
	data := forLoss(testData(m.cfg.VocabSize, 1, 5, 70), LossCrossEntropy)
	kept := tr.ActivationBytes([]int{70, 5}, true)
	tr.SetKeepLimit(0)
	need := tr.ActivationBytes([]int{70, 5}, true)
	if m.cfg.Layers < 2 || need >= kept {
		t.Fatalf("recomputing %d layers needs %d bytes, keeping %d", m.cfg.Layers, need, kept)
	}
	if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
		t.Fatal(err)
	}
	if len(tr.ar.buf) != int(need/4) || 4*int64(tr.ar.peak) != need {
		t.Fatalf("the arena holds %d floats, the call needs %d and took %d", len(tr.ar.buf), need/4, tr.ar.peak)
	}
}
