package engine

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// AdamW against a plain float64 implementation of the published algorithm
// (with decoupled weight decay and torch's global-norm clipping), fed the
// trainer's gradients, over several steps where clipping applies in some.
func TestAdamWMatchesReference(t *testing.T) {
	m, _ := smallModel(t, models.Qwen3)
	tr := mustTrainer(t, m, LoRAConfig{Rank: 2, Alpha: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 3})
	randomizeB(t, tr, 8, 0.2)
	loss, _ := NewLoss(LossCrossEntropy, nil)
	p := AdamParams{LearningRate: 0.01, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1}
	clips := []float64{0, 0.5, 100, 0.5, 0, 0.2} // off, clipping, not clipping
	type st struct{ w, m, v []float64 }
	ref := map[string]*st{}
	for name, x := range tr.Adapter() {
		s := &st{w: make([]float64, len(x.Data)), m: make([]float64, len(x.Data)), v: make([]float64, len(x.Data))}
		for i, v := range x.Data {
			s.w[i] = float64(v)
		}
		ref[name] = s
	}
	clipped := 0
	for step := 1; step <= 6; step++ {
		data := forLoss(testData(m.cfg.VocabSize, uint64(step), 6, 4), LossCrossEntropy)
		if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
			t.Fatal(err)
		}
		grads := map[string][]float64{}
		var ss float64
		for _, q := range tr.params {
			g := make([]float64, len(q.grad))
			for i, v := range q.grad {
				g[i] = float64(v)
				ss += g[i] * g[i]
			}
			grads[q.name] = g
		}
		norm := math.Sqrt(ss)
		coef := 1.0
		p.GradClipNorm = clips[step-1]
		if p.GradClipNorm > 0 && norm > p.GradClipNorm {
			coef = p.GradClipNorm / (norm + 1e-6)
			clipped++
		}
		for name, s := range ref {
			for i, g := range grads[name] {
				g *= coef
				s.w[i] -= p.LearningRate * p.WeightDecay * s.w[i]
				s.m[i] = p.Beta1*s.m[i] + (1-p.Beta1)*g
				s.v[i] = p.Beta2*s.v[i] + (1-p.Beta2)*g*g
				mh := s.m[i] / (1 - math.Pow(p.Beta1, float64(step)))
				vh := s.v[i] / (1 - math.Pow(p.Beta2, float64(step)))
				s.w[i] -= p.LearningRate * mh / (math.Sqrt(vh) + p.Eps)
			}
		}
		metrics, err := tr.OptimStep(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := metrics["unclipped_grad_l2:mean"]; math.Abs(got-norm) > 1e-9*norm {
			t.Fatalf("step %d: unclipped norm %v, want %v", step, got, norm)
		}
		for name, x := range tr.Adapter() {
			for i, v := range x.Data {
				if d := math.Abs(float64(v) - ref[name].w[i]); d > 1e-6+1e-5*math.Abs(ref[name].w[i]) {
					t.Fatalf("step %d: %s[%d] = %v, reference %v", step, name, i, v, ref[name].w[i])
				}
			}
		}
		for _, q := range tr.params {
			if slices.ContainsFunc(q.grad, func(v float32) bool { return v != 0 }) {
				t.Fatal("gradients not zeroed by the step")
			}
		}
	}
	if clipped == 0 || clipped == 6 {
		t.Fatalf("clipping applied in %d of 6 steps; the test needs both cases", clipped)
	}
}

func trainSteps(t *testing.T, tr *Trainer, from, n int) {
	t.Helper()
	loss, _ := NewLoss(LossCrossEntropy, nil)
	p := DefaultAdamParams()
	p.LearningRate, p.WeightDecay, p.GradClipNorm = 1e-3, 0.01, 1
	for step := from; step < from+n; step++ {
		data := forLoss(testData(tr.base.cfg.VocabSize, uint64(step), 12, 7), LossCrossEntropy)
		if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.OptimStep(p); err != nil {
			t.Fatal(err)
		}
	}
}

// N steps, save with the optimizer, N more steps gives the same bits as
// loading the save into a new trainer and running the same N steps.
// Also on a mixture-of-experts model, whose expert tensors are stacked.
func TestResumeIsBitExact(t *testing.T) {
	for _, name := range []string{models.TinyLlama, models.TinyQwen3MoE} {
		t.Run(name, func(t *testing.T) { checkResume(t, name) })
	}
}

func checkResume(t *testing.T, name string) {
	m := mustLoad(t, name)
	cfg := LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 9}
	a := mustTrainer(t, m, cfg)
	trainSteps(t, a, 0, 3)
	dir := filepath.Join(t.TempDir(), "state")
	if err := a.WriteStateDir(dir, name, true); err != nil {
		t.Fatal(err)
	}
	trainSteps(t, a, 3, 3)

	rc, err := ReadLoRAConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Rank != 4 || rc.Alpha != 32 || !rc.TrainAttn || !rc.TrainMLP || !rc.TrainUnembed {
		t.Fatalf("ReadLoRAConfig = %+v", rc)
	}
	b := mustTrainer(t, m, rc)
	if err := b.LoadStateDir(dir, true); err != nil {
		t.Fatal(err)
	}
	if b.Step() != 3 {
		t.Fatalf("step after load %d, want 3", b.Step())
	}
	trainSteps(t, b, 3, 3)
	wa, wb := a.Adapter(), b.Adapter()
	oa, ob := a.Optimizer(), b.Optimizer()
	for name := range wa {
		if !slices.Equal(wa[name].Data, wb[name].Data) || !slices.Equal(oa.ExpAvg[name].Data, ob.ExpAvg[name].Data) ||
			!slices.Equal(oa.ExpAvgSq[name].Data, ob.ExpAvgSq[name].Data) {
			t.Fatalf("%s differs after resuming", name)
		}
	}

	// Weights only: the optimizer starts afresh.
	c := mustTrainer(t, m, rc)
	if err := c.LoadStateDir(dir, false); err != nil {
		t.Fatal(err)
	}
	if c.Step() != 0 {
		t.Fatalf("load without optimizer kept step %d", c.Step())
	}
	// The saved adapter is a float32 PEFT adapter that samplers load.
	if _, err := m.WithAdapter(dir); err != nil {
		t.Fatal(err)
	}
	other := mustTrainer(t, m, LoRAConfig{Rank: 4, TrainMLP: true})
	if err := other.LoadStateDir(dir, false); err == nil {
		t.Fatal("loaded an adapter of another shape")
	}
}

// A fresh trainer starts from the adapter a fresh lib/peft checkpoint holds,
// with its shapes (the experts' shared-outer form included).
func TestFreshAdapterMatchesPeft(t *testing.T) {
	for _, name := range []string{models.TinyQwen3, models.TinyQwen3MoE, models.TinyGptOss} {
		t.Run(name, func(t *testing.T) { checkFreshAdapter(t, name) })
	}
}

func checkFreshAdapter(t *testing.T, name string) {
	m := mustLoad(t, name)
	cfg := LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 77}
	tr := mustTrainer(t, m, cfg)
	plan, err := peft.NewPlan(peft.Config{BaseModel: name, Rank: 4, TrainAttn: true, TrainMLP: true,
		TrainUnembed: true, DType: safetensors.F32, Seed: 77})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := plan.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	a, err := peft.ReadDir(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	got := tr.Adapter()
	if len(got) != 2*len(a.Modules) {
		t.Fatalf("trainer has %d tensors, the checkpoint %d", len(got), 2*len(a.Modules))
	}
	for mod, p := range a.Modules {
		for suffix, st := range map[string]*safetensors.Tensor{".lora_A.weight": p.A, ".lora_B.weight": p.B} {
			want, err := st.Float32()
			if err != nil {
				t.Fatal(err)
			}
			g := got["base_model.model."+mod+suffix]
			if !slices.Equal(g.Data, want) || fmt.Sprint(g.Shape) != fmt.Sprint(st.Shape) {
				t.Fatalf("%s%s differs from the fresh checkpoint", mod, suffix)
			}
		}
	}
}

// ActivationBytes is exactly the scratch a call takes, keeping every
// layer's activations or recomputing them (keep limit 0).
func TestActivationBytes(t *testing.T) {
	moe, err := New("small-moe", moeConfig(true), randomTensors(moeConfig(true), 3))
	if err != nil {
		t.Fatal(err)
	}
	gpt, err := New("small-gpt-oss", gptOssConfig(), randomTensors(gptOssConfig(), 3))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := New("small-deepseek", dsConfig(true), randomTensors(dsConfig(true), 3))
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range []models.Family{models.Llama3, models.Qwen3, models.Qwen3MoE, models.GptOss, models.DeepSeekV3} {
		m := map[models.Family]*Model{models.Qwen3MoE: moe, models.GptOss: gpt, models.DeepSeekV3: ds}[arch]
		if m == nil {
			m, _ = smallModel(t, arch)
		}
		for _, c := range []LoRAConfig{{TrainAttn: true, TrainMLP: true, TrainUnembed: true}, {TrainAttn: true}, {TrainMLP: true}, {TrainUnembed: true}} {
			c.Rank = 3
			tr := mustTrainer(t, m, c)
			loss, _ := NewLoss(LossCrossEntropy, nil)
			for i, n := range []int{5, 64, 70, 64, 70} {
				if i == 3 {
					tr.SetKeepLimit(0)
				}
				for _, bwd := range []bool{false, true} {
					data := forLoss(testData(m.cfg.VocabSize, 1, n), LossCrossEntropy)
					if _, err := tr.run(context.Background(), loss, data, bwd); err != nil {
						t.Fatal(err)
					}
					if got, want := tr.ActivationBytes([]int{n, 2}, bwd), 4*int64(tr.ar.peak); got != want {
						t.Errorf("%s %+v n=%d backward=%v recompute=%v: estimate %d, used %d", arch, c, n, bwd, i >= 3, got, want)
					}
				}
			}
		}
	}
}
