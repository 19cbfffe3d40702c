package server

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// TestSmallBudgetRunsDatumsOneByOne: a tiny model runs a request's datums
// side by side, each with its own arena (engine CallBytes); under a
// --train-memory that holds one datum's activations but not several, the
// request still runs (one datum at a time) instead of being refused.
func TestSmallBudgetRunsDatumsOneByOne(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	const budget = 1 << 20
	e := newTrainEnv(t, Options{TrainMemory: budget})
	ctx := context.Background()
	lora := tinkerapi.LoraConfig{Rank: 4, Seed: new(int64(1)), TrainAttn: true, TrainMLP: true, TrainUnembed: true}
	tc, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, lora, nil)
	if err != nil {
		t.Fatal(err)
	}
	var data []tinkerapi.Datum
	for range 4 {
		data = append(data, sft("a", strings.Repeat("b", 78))) // 80 tokens: one fits the budget
	}
	if _, err := tc.ForwardBackward(ctx, tinkerapi.ForwardBackwardInput{Data: data, LossFn: "cross_entropy"}); err != nil {
		t.Fatalf("four datums that fit one at a time: %v", err)
	}
}
