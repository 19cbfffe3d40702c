package server

import (
	"context"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// BenchmarkDefaultLatency measures what a client of a server opened with
// default options waits for: a 10-step SDK-like training loop on tiny-llama
// (forward_backward on one 32-token datum, then optim_step, each awaited
// through retrieve_future) and one 16-token sample, over loopback HTTP.
// With no artificial future delay both are bounded by the engine's work
// plus a few loopback round trips.
func BenchmarkDefaultLatency(b *testing.B) {
	pool := &engine.Pool{}
	sess := benchSession(b, Options{Engine: pool, Sampler: EngineSampler(pool)})
	ctx := context.Background()
	tc, err := sess.CreateTrainingClient(ctx, models.TinyLlama, tinkerapi.LoraConfig{Rank: 8, Seed: new(int64(1)), TrainAttn: true, TrainMLP: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	toks := make([]int, 32)
	targets := make([]int64, 32)
	for p := range toks {
		toks[p], targets[p] = p*7%256, int64((p+1)*7%256)
	}
	data := []tinkerapi.Datum{{ModelInput: toks, LossFnInputs: map[string]tinkerapi.Tensor{"target_tokens": tinkerapi.Int64s(targets)}}}
	loop := func() {
		for range 10 {
			if _, err := tc.ForwardBackward(ctx, tinkerapi.ForwardBackwardInput{Data: data, LossFn: "cross_entropy"}); err != nil {
				b.Fatal(err)
			}
			if _, err := tc.OptimStep(ctx, tinkerapi.DefaultAdamParams()); err != nil {
				b.Fatal(err)
			}
		}
	}
	path, err := tc.SaveWeightsForSampler(ctx, "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	sid, err := sess.CreateSamplingSession(ctx, "", path)
	if err != nil {
		b.Fatal(err)
	}
	req := tinkerapi.NewSampleRequest([]int{models.TinyBOS, 'Q', ':'})
	req.MaxTokens, req.Seed = 16, new(int64(3))
	sample := func() {
		if _, err := sess.Sample(ctx, sid, req); err != nil {
			b.Fatal(err)
		}
	}
	loop() // loads the model and creates the trainer
	sample()
	var loopSec, sampleSec float64
	for b.Loop() {
		start := time.Now()
		loop()
		loopSec += time.Since(start).Seconds()
		start = time.Now()
		sample()
		sampleSec += time.Since(start).Seconds()
	}
	b.ReportMetric(loopSec/float64(b.N), "s/10-step-loop")
	b.ReportMetric(1000*sampleSec/float64(b.N), "ms/16-token-sample")
}
