package server

import (
	"context"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// BenchmarkTrainStepHTTP times a full training step (forward_backward over
// 8 sequences x 128 tokens, then optim_step) on tiny-qwen3 through the
// HTTP API with the repository's client, next to the same step called on
// the engine directly; the difference is the server's overhead.
func BenchmarkTrainStepHTTP(b *testing.B) {
	pool := &engine.Pool{}
	sess := benchSession(b, Options{Engine: pool, Sampler: EngineSampler(pool), FutureDelay: time.Microsecond, PollHold: time.Second})
	ctx := context.Background()
	lora := tinkerapi.LoraConfig{Rank: 32, Seed: new(int64(1)), TrainAttn: true, TrainMLP: true, TrainUnembed: true}
	tc, err := sess.CreateTrainingClient(ctx, models.TinyQwen3, lora, nil)
	if err != nil {
		b.Fatal(err)
	}
	const batch, length = 8, 128
	var data []tinkerapi.Datum
	var edata []engine.Datum
	for i := range batch {
		toks := make([]int, length)
		targets := make([]int64, length)
		ft := make([]float64, length)
		for p := range toks {
			toks[p] = (i*31 + p*7) % 256
			targets[p] = int64((i*31 + (p+1)*7) % 256)
			ft[p] = float64(targets[p])
		}
		data = append(data, tinkerapi.Datum{ModelInput: toks, LossFnInputs: map[string]tinkerapi.Tensor{"target_tokens": tinkerapi.Int64s(targets)}})
		edata = append(edata, engine.Datum{ModelInput: toks, LossFnInputs: map[string][]float64{engine.InputTargetTokens: ft}})
	}
	adam := tinkerapi.DefaultAdamParams()
	step := func() {
		if _, err := tc.ForwardBackward(ctx, tinkerapi.ForwardBackwardInput{Data: data, LossFn: "cross_entropy"}); err != nil {
			b.Fatal(err)
		}
		if _, err := tc.OptimStep(ctx, adam); err != nil {
			b.Fatal(err)
		}
	}
	step() // loads the model and creates the trainer
	start := time.Now()
	for b.Loop() {
		step()
	}
	httpSec := time.Since(start).Seconds() / float64(b.N)

	base, err := pool.Model(models.TinyQwen3)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := engine.NewTrainer(base, engine.LoRAConfig{Rank: 32, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	loss, _ := engine.NewLoss(engine.LossCrossEntropy, nil)
	start = time.Now()
	for range b.N {
		if _, err := tr.ForwardBackward(ctx, loss, edata); err != nil {
			b.Fatal(err)
		}
		if _, err := tr.OptimStep(engine.DefaultAdamParams()); err != nil {
			b.Fatal(err)
		}
	}
	engineSec := time.Since(start).Seconds() / float64(b.N)
	b.ReportMetric(batch*length/httpSec, "tok/s-http")
	b.ReportMetric(batch*length/engineSec, "tok/s-engine")
	b.ReportMetric(100*(httpSec-engineSec)/engineSec, "%overhead")
}

// benchSession serves o (with a temporary data dir, no sweeps) on
// loopback for the length of the benchmark and opens a client session on it.
func benchSession(b *testing.B, o Options) *tinkerapi.Session {
	b.Helper()
	o.DataDir, o.SweepInterval = b.TempDir(), -1
	s, err := Open(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	url, err := s.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	c, err := tinkerapi.New(tinkerapi.Config{BaseURL: url, APIKey: key})
	if err != nil {
		b.Fatal(err)
	}
	sess, err := c.CreateSession(context.Background(), tinkerapi.SessionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sess.Close() })
	return sess
}
