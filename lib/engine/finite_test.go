package engine

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// An optimizer step that would make the adapter non-finite is refused and
// leaves weights, moments, gradients and step count exactly as they were:
// a sane step afterwards gives the same bits as on a trainer that never
// saw the refused one.
func TestOptimStepFiniteUndoes(t *testing.T) {
	m, _ := smallModel(t, models.Qwen3)
	c := LoRAConfig{Rank: 2, Alpha: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 5}
	loss, _ := NewLoss(LossCrossEntropy, nil)
	data := forLoss(testData(m.cfg.VocabSize, 9, 5, 3), LossCrossEntropy)
	sane := AdamParams{LearningRate: 0.01, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8}
	ref, tr := mustTrainer(t, m, c), mustTrainer(t, m, c)
	for _, x := range []*Trainer{ref, tr} {
		if _, err := x.ForwardBackward(context.Background(), loss, data); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []AdamParams{
		{LearningRate: 0.01, Beta1: 0.9, Beta2: 0.95, Eps: 0}, // lora_A's gradient is 0 while B is 0: 0/0
		{LearningRate: 1e308, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8},
		{LearningRate: 0.01, Beta1: 0.9, Beta2: 0.95, WeightDecay: 1e308},
	} {
		_, err := tr.OptimStepFinite(bad)
		var nf *NonFiniteError
		if !errors.As(err, &nf) {
			t.Fatalf("OptimStepFinite(%+v) = %v, want a *NonFiniteError", bad, err)
		}
		if tr.Step() != 0 || !reflect.DeepEqual(tr.Adapter(), ref.Adapter()) || !reflect.DeepEqual(tr.Optimizer(), ref.Optimizer()) {
			t.Fatalf("OptimStepFinite(%+v) left the trainer changed", bad)
		}
	}
	want, err := ref.OptimStep(sane)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tr.OptimStepFinite(sane)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("sane step after refused ones: %v, %v; want %v", got, err, want)
	}
	if !reflect.DeepEqual(tr.Adapter(), ref.Adapter()) || !reflect.DeepEqual(tr.Optimizer(), ref.Optimizer()) {
		t.Error("the sane step after refused ones differs from one on a fresh trainer")
	}
}
