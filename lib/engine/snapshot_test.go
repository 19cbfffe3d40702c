package engine

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// A snapshot taken between forward_backward and optim_step carries the
// pending gradients: the restored trainer's next steps give the same bits.
func TestSnapshotKeepsPendingGradients(t *testing.T) {
	m := mustLoad(t, models.TinyLlama)
	cfg := LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 4}
	a := mustTrainer(t, m, cfg)
	trainSteps(t, a, 0, 2)
	loss, _ := NewLoss(LossCrossEntropy, nil)
	if _, err := a.ForwardBackward(context.Background(), loss, forLoss(testData(m.cfg.VocabSize, 50, 12, 7), LossCrossEntropy)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "snap")
	if err := a.WriteSnapshotDir(dir, models.TinyLlama); err != nil {
		t.Fatal(err)
	}
	p := DefaultAdamParams()
	p.LearningRate = 1e-3
	cont := func(tr *Trainer) Tensors {
		if _, err := tr.OptimStep(p); err != nil {
			t.Fatal(err)
		}
		trainSteps(t, tr, 3, 1)
		return tr.Adapter()
	}
	b := mustTrainer(t, m, cfg)
	if err := b.LoadSnapshotDir(dir); err != nil {
		t.Fatal(err)
	}
	// Without its gradients the state alone continues differently.
	c := mustTrainer(t, m, cfg)
	if err := c.LoadStateDir(dir, true); err != nil {
		t.Fatal(err)
	}
	wa, wb, wc := cont(a), cont(b), cont(c)
	same := true
	for name := range wa {
		if !slices.Equal(wa[name].Data, wb[name].Data) {
			t.Fatalf("%s differs after restoring the snapshot", name)
		}
		same = same && slices.Equal(wa[name].Data, wc[name].Data)
	}
	if same {
		t.Fatal("dropping the pending gradients changed nothing: the test cannot tell")
	}
}
