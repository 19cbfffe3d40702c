package train

import (
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/modelref"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// The loops' throughput on the local server (futures ready after 1ms),
// each against SFT on the same server as the reference: per step and per
// token, so `go test -bench Loop` prints each loop's cost as a ratio of
// SFT's. SFT: ten conversations, one step of batch 10. DPO: ten pairs, one
// step of batch 10 (a forward, then a weighted forward_backward over
// twenty answers). RL: two prompts, groups of 8, 8 tokens (a sampler save,
// sixteen samples, a forward_backward). Evaluation: ten rows, greedy,
// 8 tokens.
func BenchmarkLoop(b *testing.B) {
	sess := localSession(b, time.Millisecond)
	seed := int64(1)
	lora := tinkerapi.DefaultLoraConfig()
	lora.Rank, lora.Seed = 8, &seed
	sftStep := 0.0 // seconds per SFT step, the reference
	run := func(b *testing.B, ref bool, step func(n int) (tokens int)) {
		b.ResetTimer()
		tokens := step(b.N)
		per := b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(1/per, "steps/s")
		b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
		if ref {
			sftStep = per // the last (longest) SFT run is the reference
		}
		b.ReportMetric(per/sftStep, "x_sft_step")
	}
	b.Run("SFT", func(b *testing.B) {
		run(b, true, func(n int) int {
			res, err := SFT(b.Context(), sess, SFTOptions{BaseModel: "tinker-local/tiny-llama", Data: qa(10), Lora: lora,
				TrainOn: chat.TrainAllAssistant, BatchSize: 10, Epochs: n, LearningRate: 1e-3, Schedule: "constant"})
			if err != nil {
				b.Fatal(err)
			}
			return sumTokens(res.Steps)
		})
	})
	b.Run("DPO", func(b *testing.B) {
		run(b, false, func(n int) int {
			res, err := DPO(b.Context(), sess, DPOOptions{BaseModel: "tinker-local/tiny-llama", Data: prefs(10), Lora: lora, Beta: 0.1,
				BatchSize: 10, Epochs: n, LearningRate: 1e-3, Schedule: "constant"})
			if err != nil {
				b.Fatal(err)
			}
			return sumTokens(res.Steps)
		})
	})
	b.Run("RL", func(b *testing.B) {
		run(b, false, func(n int) int {
			o := rlOptions("", n)
			res, err := RL(b.Context(), sess, o)
			if err != nil {
				b.Fatal(err)
			}
			return sumTokens(res.Steps)
		})
	})
	b.Run("Eval", func(b *testing.B) {
		m, err := modelref.Resolve(b.Context(), sess, "tinker-local/tiny-llama")
		if err != nil {
			b.Fatal(err)
		}
		run(b, false, func(n int) int {
			tokens := 0
			for range n {
				res, err := Evaluate(b.Context(), sess, EvalOptions{Model: m, Data: qa(10), MaxTokens: 8,
					NumSamples: 1, Concurrency: DefaultEvalConcurrency})
				if err != nil {
					b.Fatal(err)
				}
				tokens += res.Tokens
			}
			return tokens
		})
	})
}

func sumTokens[M Record](steps []M) int {
	n := 0
	for _, m := range steps {
		t, _ := m.Throughput()
		n += t
	}
	return n
}
