package server

import (
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// TestHugeRewardNamed (issue 31, item 21): rewards of ±3e38 (advantages
// at the edge of float32) make the gradients overflow; the optim_step
// that fails names the advantages and says to scale the rewards, instead
// of blaming learning_rate or weight_decay, and the model is unchanged.
func TestHugeRewardNamed(t *testing.T) {
	e := newTrainEnv(t, Options{})
	ctx := t.Context()
	tc, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, tinkerapi.LoraConfig{Rank: 4, Seed: new(int64(3)), TrainAttn: true, TrainMLP: true, TrainUnembed: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tokens := []int{models.TinyBOS, 'a', 'b', 'c', 'd', 'e'}
	n := len(tokens) - 1
	targets, logprobs, adv := make([]int64, n), make([]float32, n), make([]float32, n)
	for i := range n {
		targets[i], logprobs[i] = int64(tokens[i+1]), -1
		adv[i] = 3e38
		if i%2 == 1 {
			adv[i] = -3e38
		}
	}
	d := tinkerapi.Datum{ModelInput: tokens[:n], LossFnInputs: map[string]tinkerapi.Tensor{
		"target_tokens": tinkerapi.Int64s(targets), "logprobs": tinkerapi.Float32s(logprobs), "advantages": tinkerapi.Float32s(adv)}}
	_, fbErr := tc.ForwardBackward(ctx, tinkerapi.ForwardBackwardInput{Data: []tinkerapi.Datum{d}, LossFn: "importance_sampling"})
	_, err = tc.OptimStep(ctx, tinkerapi.DefaultAdamParams())
	if fbErr != nil {
		err = fbErr
	}
	if err == nil {
		t.Fatal("a step with rewards of 3e38 succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, "advantages") || strings.Contains(msg, "learning_rate or weight_decay") {
		t.Errorf("error %q: want it to name the advantages, not the adam_params", msg)
	} else if strings.Count(msg, "optim_step on ") != 1 {
		t.Errorf("error %q names the operation more than once", msg)
	}
}
