package engine

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
)

const benchTokens = 256

// processCPU is the process's user+system CPU time in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// generate runs one request of n samples and returns the tokens produced.
func generate(b testing.TB, m *Model, n int, seed int64) int {
	r, err := m.Sample(context.Background(), SampleRequest{Prompt: []int{models.TinyBOS, 'H', 'i'}, NumSamples: n,
		MaxTokens: benchTokens, Temperature: 1, Seed: &seed})
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
// one sequence each, measured in the same run, and their speed-ups over one
// sequence. The tok/cpu-s figures divide by the process's CPU time instead
// of wall time: the engine's own speed per core, less sensitive to other
// load on a shared machine (with 2 idle cores, x-batch ≈ 2 × the ratio of
// the two tok/cpu-s figures).
func BenchmarkGenerate(b *testing.B) {
	for _, name := range []string{models.TinyLlama, models.TinyQwen3} {
		m := mustLoad(b, name)
		b.Run(name, func(b *testing.B) {
			var single, batch, conc time.Duration
			var singleCPU, batchCPU float64
			var nSingle, nBatch, nConc int
			seed := int64(0)
			for b.Loop() {
				seed++
				c0 := processCPU()
				t0 := time.Now()
				nSingle += generate(b, m, 1, seed)
				t1 := time.Now()
				c1 := processCPU()
				singleCPU += c1 - c0
				nBatch += generate(b, m, 8, seed)
				t2 := time.Now()
				batchCPU += processCPU() - c1
				var wg sync.WaitGroup
				var mu sync.Mutex
				for i := range 8 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						n := generate(b, m, 1, seed*8+int64(i))
						mu.Lock()
						nConc += n
						mu.Unlock()
					}()
				}
				wg.Wait()
				single, batch, conc = single+t1.Sub(t0), batch+t2.Sub(t1), conc+time.Since(t2)
			}
			r1 := float64(nSingle) / single.Seconds()
			r8 := float64(nBatch) / batch.Seconds()
			rc := float64(nConc) / conc.Seconds()
			b.ReportMetric(r1, "tok/s-1seq")
			b.ReportMetric(float64(nSingle)/singleCPU, "tok/cpu-s-1seq")
			b.ReportMetric(float64(nBatch)/batchCPU, "tok/cpu-s-8batch")
			b.ReportMetric(r8, "tok/s-8batch")
			b.ReportMetric(rc, "tok/s-8conc")
			b.ReportMetric(r8/r1, "x-batch")
			b.ReportMetric(rc/r1, "x-conc")
		})
	}
}
