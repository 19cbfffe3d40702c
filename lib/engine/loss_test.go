package engine

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// topKData returns datums with (N, K) targets and weights of both signs, a
// repeated target included, as top-K distillation sends them.
func topKData(vocab, k int, seed uint64, lens ...int) []Datum {
	r := newRNG(seed)
	var data []Datum
	for _, n := range lens {
		d := Datum{ModelInput: make([]int, n), Width: k, LossFnInputs: map[string][]float64{}}
		tg, w := make([]float64, n*k), make([]float64, n*k)
		for i := range n {
			d.ModelInput[i] = int(r.next() % uint64(vocab))
		}
		for j := range tg {
			tg[j] = float64(r.next() % uint64(vocab))
			w[j] = 2*r.float64() - 0.7
		}
		tg[1] = tg[0]
		d.LossFnInputs[InputTargetTokens], d.LossFnInputs[InputWeights] = tg, w
		data = append(data, d)
	}
	return data
}

func TestTopKCrossEntropyMatchesFiniteDifferences(t *testing.T) {
	for _, arch := range []models.Family{models.Llama3, models.Qwen3} {
		t.Run(string(arch), func(t *testing.T) {
			m, base := smallModel(t, arch)
			tr := mustTrainer(t, m, LoRAConfig{Rank: 3, Alpha: 6, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 5})
			randomizeB(t, tr, 3, 0.3)
			ce, _ := NewLoss(LossCrossEntropy, nil)
			data := topKData(m.cfg.VocabSize, 3, 9, 5, 4)
			res, err := tr.ForwardBackward(context.Background(), ce, data)
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range res.Outputs {
				if want := len(data[i].ModelInput) * 3; len(o.Logprobs) != want || len(o.ElementwiseLoss) != want {
					t.Errorf("datum %d: %d logprobs, %d losses, want %d each", i, len(o.Logprobs), len(o.ElementwiseLoss), want)
				}
			}
			want := refLoss(m.cfg, base, tr.Adapter(), tr.scale, LossCrossEntropy, nil, data)
			if math.Abs(res.LossSum-want) > 1e-4*math.Max(1, math.Abs(want)) {
				t.Errorf("loss:sum %v, reference %v", res.LossSum, want)
			}
			checkFD(t, tr, base, LossCrossEntropy, nil, data)
		})
	}
}

// Column k of an (N, K) request scores exactly what an (N,) request with
// that column's targets scores, bit for bit.
func TestTopKColumnsMatchSingleTargets(t *testing.T) {
	m, _ := smallModel(t, models.Qwen3)
	tr := mustTrainer(t, m, LoRAConfig{Rank: 2, TrainMLP: true, Seed: 1})
	randomizeB(t, tr, 4, 0.3)
	ce, _ := NewLoss(LossCrossEntropy, nil)
	const k = 4
	wide := topKData(m.cfg.VocabSize, k, 3, 6)
	res, err := tr.Forward(context.Background(), ce, wide)
	if err != nil {
		t.Fatal(err)
	}
	n := len(wide[0].ModelInput)
	for col := range k {
		tg, w := make([]float64, n), make([]float64, n)
		for p := range n {
			tg[p], w[p] = wide[0].LossFnInputs[InputTargetTokens][p*k+col], wide[0].LossFnInputs[InputWeights][p*k+col]
		}
		one := []Datum{{ModelInput: wide[0].ModelInput, LossFnInputs: map[string][]float64{InputTargetTokens: tg, InputWeights: w}}}
		r1, err := tr.Forward(context.Background(), ce, one)
		if err != nil {
			t.Fatal(err)
		}
		for p := range n {
			if got, want := res.Outputs[0].Logprobs[p*k+col], r1.Outputs[0].Logprobs[p]; got != want {
				t.Fatalf("position %d target %d: logprob %v, single-target request %v", p, col, got, want)
			}
		}
	}
}

func TestTopKValidation(t *testing.T) {
	m := mustLoad(t, models.TinyLlama)
	tr := mustTrainer(t, m, LoRAConfig{Rank: 2, TrainMLP: true})
	ce, _ := NewLoss(LossCrossEntropy, nil)
	is, _ := NewLoss(LossImportanceSampling, nil)
	wideDatum := func() Datum {
		return Datum{ModelInput: []int{1, 2}, Width: 2, LossFnInputs: map[string][]float64{
			InputTargetTokens: {2, 3, 4, 5}, InputWeights: {1, 0.5, 1, 0.5}}}
	}
	cases := []struct {
		loss  Loss
		edit  func(*Datum)
		field string
		want  string
	}{
		{ce, func(d *Datum) { d.LossFnInputs[InputWeights] = []float64{1, 1} }, "loss_fn_inputs.weights", "target_tokens has shape (2, 2); give 4"},
		{ce, func(d *Datum) { d.LossFnInputs[InputTargetTokens] = []float64{2, 3, 4} }, "loss_fn_inputs.target_tokens", "has 3 values"},
		{ce, func(d *Datum) { d.LossFnInputs[InputTargetTokens][3] = 3.5 }, "loss_fn_inputs.target_tokens", "target tokens must be integer"},
		{is, func(d *Datum) {
			d.LossFnInputs = map[string][]float64{InputTargetTokens: {2, 3, 4, 5}, InputLogprobs: {-1, -1}, InputAdvantages: {1, 1}}
		}, "loss_fn_inputs.target_tokens", "only cross_entropy takes (N, K) targets"},
	}
	for _, tc := range cases {
		d := wideDatum()
		tc.edit(&d)
		_, err := tr.Forward(context.Background(), tc.loss, []Datum{d})
		var ie *InputError
		if !errors.As(err, &ie) || ie.Field != tc.field || !strings.Contains(ie.Msg, tc.want) {
			t.Errorf("got %v, want %s: ...%s", err, tc.field, tc.want)
		}
	}
	if _, err := tr.Forward(context.Background(), ce, []Datum{wideDatum()}); err != nil {
		t.Fatalf("valid (N, K) datum refused: %v", err)
	}
}

// A target of 3.5 is not an integer, which is what the error says; a whole
// number sent as a float is accepted (issue 22, item 4).
func TestNonIntegerTargetToken(t *testing.T) {
	m := mustLoad(t, models.TinyLlama)
	tr := mustTrainer(t, m, LoRAConfig{Rank: 2, TrainMLP: true})
	ce, _ := NewLoss(LossCrossEntropy, nil)
	_, err := tr.Forward(context.Background(), ce, []Datum{{ModelInput: []int{1, 2}, LossFnInputs: map[string][]float64{InputTargetTokens: {3.5, 2}}}})
	if err == nil || !strings.Contains(err.Error(), "value 3.5 at position 0 is not an integer: target tokens must be integer token ids") {
		t.Errorf("3.5 as a target: %v", err)
	}
	if _, err := tr.Forward(context.Background(), ce, []Datum{{ModelInput: []int{1, 2}, LossFnInputs: map[string][]float64{InputTargetTokens: {3.0, 2}}}}); err != nil {
		t.Errorf("3.0 as a target: %v", err)
	}
}
