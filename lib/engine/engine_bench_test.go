package engine

import (
	"context"
	"math"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
)

// Tokens generated per sequence by BenchmarkGenerate: tiny models, and
// the Qwen3-0.6B-shaped model (about 0.1 s a token).
const (
	benchTokens      = 256
	benchTokensLarge = 16
)

// processCPU is the process's user+system CPU time in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// generate runs one request of n samples of the given length and returns
// the tokens produced.
func generate(b testing.TB, m *Model, prompt []int, n, tokens int, seed int64) int {
	r, err := m.Sample(context.Background(), SampleRequest{Prompt: prompt, NumSamples: n,
		MaxTokens: tokens, Temperature: 1, Seed: &seed})
	if err != nil {
		b.Fatal(err)
	}
	total := 0
	for _, s := range r.Sequences {
		total += len(s.Tokens)
	}
	return total
}

// BenchmarkGenerate reports generated tokens/s for one sequence, for 8
// sequences in one request (num_samples=8) and for 8 concurrent requests of
// one sequence each (which share one batch), measured in the same run, and
// their speed-ups over one sequence: on the tiny models and on a random
// Qwen3-0.6B-shaped model with bfloat16 weights (memory-bound decoding,
// where a batch of 8 costs little more than one sequence) and 64-token
// prompts, so that the concurrent requests' prefills count as well. The tok/cpu-s
// figures divide by the process's CPU time instead of wall time: the
// engine's own speed per core, less sensitive to other load on a shared
// machine (with 2 idle cores, x-batch ≈ 2 × the ratio of the two tok/cpu-s
// figures).
func BenchmarkGenerate(b *testing.B) {
	for _, name := range []string{models.TinyLlama, models.TinyQwen3, "qwen3-0.6b-shape-bf16"} {
		b.Run(name, func(b *testing.B) {
			m, tokens, prompt := benchModel(b, name)
			var single, batch, conc time.Duration
			var singleCPU, batchCPU, concCPU float64
			var nSingle, nBatch, nConc int
			seed := int64(0)
			for b.Loop() {
				seed++
				c0 := processCPU()
				t0 := time.Now()
				nSingle += generate(b, m, prompt, 1, tokens, seed)
				t1 := time.Now()
				c1 := processCPU()
				singleCPU += c1 - c0
				nBatch += generate(b, m, prompt, 8, tokens, seed)
				t2 := time.Now()
				c2 := processCPU()
				batchCPU += c2 - c1
				var wg sync.WaitGroup
				var mu sync.Mutex
				for i := range 8 {
					wg.Go(func() {
						n := generate(b, m, prompt, 1, tokens, seed*8+int64(i))
						mu.Lock()
						nConc += n
						mu.Unlock()
					})
				}
				wg.Wait()
				concCPU += processCPU() - c2
				single, batch, conc = single+t1.Sub(t0), batch+t2.Sub(t1), conc+time.Since(t2)
			}
			r1 := float64(nSingle) / single.Seconds()
			r8 := float64(nBatch) / batch.Seconds()
			rc := float64(nConc) / conc.Seconds()
			b.ReportMetric(r1, "tok/s-1seq")
			b.ReportMetric(float64(nSingle)/singleCPU, "tok/cpu-s-1seq")
			b.ReportMetric(float64(nBatch)/batchCPU, "tok/cpu-s-8batch")
			b.ReportMetric(float64(nConc)/concCPU, "tok/cpu-s-8conc")
			b.ReportMetric(r8, "tok/s-8batch")
			b.ReportMetric(rc, "tok/s-8conc")
			b.ReportMetric(r8/r1, "x-batch")
			b.ReportMetric(rc/r1, "x-conc")
		})
	}
}

// benchModel returns a built-in tiny model, or the random 0.6B-shaped one
// with bfloat16 matrices, how many tokens to generate per sequence and
// the prompt.
func benchModel(b *testing.B, name string) (*Model, int, []int) {
	if name != "qwen3-0.6b-shape-bf16" {
		return mustLoad(b, name), benchTokens, []int{models.TinyBOS, 'H', 'i'}
	}
	prompt := make([]int, 64)
	for i := range prompt {
		prompt[i] = 1000 + 37*i
	}
	c := qwen3Small()
	ts := randomTensors(c, 1)
	matricesToBF16(ts)
	m, err := New(name, c, ts)
	if err != nil {
		b.Fatal(err)
	}
	return m, benchTokensLarge, prompt
}

// matricesToBF16 replaces every matrix of ts by its bfloat16 rounding
// toward zero (the top 16 bits), as a bf16 checkpoint would hold it.
func matricesToBF16(ts Tensors) {
	for k, t := range ts {
		if len(t.Shape) == 2 {
			t.BF16 = make([]uint16, len(t.Data))
			for i, v := range t.Data {
				t.BF16[i] = uint16(math.Float32bits(v) >> 16)
			}
			t.Data = nil
			ts[k] = t
		}
	}
}
