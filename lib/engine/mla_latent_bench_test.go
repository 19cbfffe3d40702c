package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// dsBenchConfig is a DeepSeek-V3 with V3.1's attention head shape
// (kv_lora_rank 512, rope 64, nope 128, v 128) on 16 heads and 4 layers,
// about 67M parameters: large enough that a step runs as one batch with
// its products split across the cores, as real models do.
func dsBenchConfig() Config {
	c := dsConfig(true)
	c.MLA = &models.MLA{QLoraRank: 384, KVLoraRank: 512, QKNopeDim: 128, QKRopeDim: 64, VHeadDim: 128}
	c.Heads, c.KVHeads, c.HeadDim = 16, 16, 192
	c.Hidden, c.Intermediate, c.Layers, c.VocabSize = 1024, 1024, 4, 8192
	c.MoEIntermediate, c.SharedExperts, c.MaxPositionEmbeddings = 256, 1, 4096
	c.RopeScaling.OriginalMaxPositionEmbeddings = 512
	return c
}

// BenchmarkLatentDecode reports the CPU-seconds per decoded token of
// DeepSeek models after prompts of two lengths, for one sequence and for 8
// samples of one prompt: the process's CPU time from the first sampled
// token to the last (StopFunc runs on the stepping goroutine after each),
// so prefill is left out. CPU-seconds rather than wall time, so an A/B run
// on a loaded machine still compares.
func BenchmarkLatentDecode(b *testing.B) {
	const gen = 16
	for _, name := range []string{models.TinyDeepSeek, "ds-bench"} {
		var m *Model
		var err error
		if name == models.TinyDeepSeek {
			m, err = Load(name)
		} else {
			c := dsBenchConfig()
			m, err = New(name, c, randomTensors(c, 3))
		}
		if err != nil {
			b.Fatal(err)
		}
		for _, tc := range []struct{ prompt, samples int }{{64, 1}, {256, 8}, {1024, 1}} {
			b.Run(fmt.Sprintf("%s/prompt=%d/samples=%d", name, tc.prompt, tc.samples), func(b *testing.B) {
				prompt := make([]int, tc.prompt)
				for i := range prompt {
					prompt[i] = (i*7919 + 5) % m.cfg.VocabSize
				}
				var cpu float64
				for b.Loop() {
					var first, last float64
					stop := func(g []int) bool {
						if len(g) == 1 && first == 0 {
							first = processCPU()
						}
						if len(g) == gen+1 {
							last = processCPU()
						}
						return false
					}
					seed := int64(1)
					if _, err := m.Sample(context.Background(), SampleRequest{Prompt: prompt, NumSamples: tc.samples,
						MaxTokens: gen + 1, Temperature: 1, Seed: &seed, StopFunc: stop}); err != nil {
						b.Fatal(err)
					}
					cpu += last - first
				}
				b.ReportMetric(cpu/float64(b.N*gen*tc.samples)*1e3, "cpu-ms/token")
			})
		}
	}
}
