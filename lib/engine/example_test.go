package engine

import (
	"context"
	"fmt"
)

func ExampleModel_Sample() {
	m, err := Load("tinker-local/tiny-llama")
	if err != nil {
		panic(err)
	}
	seed := int64(1)
	resp, err := m.Sample(context.Background(), SampleRequest{
		Prompt:      m.Tokenizer().Encode("Hello", true),
		MaxTokens:   8,
		Temperature: 1,
		Seed:        &seed,
		StopStrings: []string{"\n"},
	})
	if err != nil {
		panic(err)
	}
	s := resp.Sequences[0]
	fmt.Println(len(s.Tokens), len(s.Logprobs), s.StopReason)
	// Output: 8 8 length
}

// A supervised step loop: forward_backward accumulates the gradient of the
// summed loss, optim_step applies it with AdamW.
func ExampleTrainer() {
	base, err := Load("tinker-local/tiny-llama")
	if err != nil {
		panic(err)
	}
	tr, err := NewTrainer(base, LoRAConfig{Rank: 8, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 1})
	if err != nil {
		panic(err)
	}
	seq := base.Tokenizer().Encode("Q: 2+2?\nA: 4", true)
	targets := make([]float64, len(seq)-1)
	for i, t := range seq[1:] {
		targets[i] = float64(t)
	}
	data := []Datum{{ModelInput: seq[:len(seq)-1], LossFnInputs: map[string][]float64{InputTargetTokens: targets}}}
	loss, err := NewLoss(LossCrossEntropy, nil)
	if err != nil {
		panic(err)
	}
	adam := DefaultAdamParams()
	adam.LearningRate = 1e-2
	var losses []float64
	for range 10 {
		res, err := tr.ForwardBackward(context.Background(), loss, data)
		if err != nil {
			panic(err)
		}
		losses = append(losses, res.LossSum)
		if _, err := tr.OptimStep(adam); err != nil {
			panic(err)
		}
	}
	fmt.Println(losses[9] < losses[0]/2, tr.Step())
	// Output: true 10
}
