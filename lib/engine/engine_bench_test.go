package engine

import (
	"context"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
// prompts, so that the concurrent requests' prefills count as well. The
// tok/cpu-s figures divide by the process's CPU time instead of wall time:
// the engine's own speed per core, less sensitive to other load on a
// shared machine (with 2 idle cores, x-batch ≈ 2 × the ratio of the two
// tok/cpu-s figures).
//
// Both 8-sequence cases do the same work: one prompt, temperature 1, no
// stop condition, so every sequence generates exactly its max tokens
// (only the seeds differ). Warm-up (the worker pool, first allocations)
// runs before the timer. conc/batch is the median over the rounds of each
// round's ratio of the two, wall time and CPU time, with the two cases'
// order alternating between rounds, so one slow moment of a shared machine
// moves one round's ratio rather than the sums; steps-8batch and
// steps-8conc count the forward passes each case ran per round (the
// batcher's counter), which load does not move: equal counts mean the
// concurrent requests were prefilled and decoded as one batch.
func BenchmarkGenerate(b *testing.B) {
	for _, name := range []string{models.TinyLlama, models.TinyQwen3, "qwen3-0.6b-shape-bf16"} {
		b.Run(name, func(b *testing.B) {
			m, tokens, prompt := benchModel(b, name)
			generate(b, m, prompt, 1, 2, 0)
			generate(b, m, prompt, 8, 2, 0)
			var single, batch, conc genRun
			var wallRatios, cpuRatios []float64
			seed := int64(0)
			for b.Loop() {
				seed++
				single.add(m, func() int { return generate(b, m, prompt, 1, tokens, seed) })
				runBatch := func() genRun { return measure(m, func() int { return generate(b, m, prompt, 8, tokens, seed) }) }
				runConc := func() genRun { return measure(m, func() int { return generateConc(b, m, prompt, tokens, seed) }) }
				var rb, rc genRun
				if seed%2 == 0 {
					rc = runConc()
					rb = runBatch()
				} else {
					rb = runBatch()
					rc = runConc()
				}
				batch.plus(rb)
				conc.plus(rc)
				wallRatios = append(wallRatios, rc.rate()/rb.rate())
				cpuRatios = append(cpuRatios, rc.cpuRate()/rb.cpuRate())
			}
			r1 := single.rate()
			b.ReportMetric(r1, "tok/s-1seq")
			b.ReportMetric(single.cpuRate(), "tok/cpu-s-1seq")
			b.ReportMetric(batch.cpuRate(), "tok/cpu-s-8batch")
			b.ReportMetric(conc.cpuRate(), "tok/cpu-s-8conc")
			b.ReportMetric(batch.rate(), "tok/s-8batch")
			b.ReportMetric(conc.rate(), "tok/s-8conc")
			b.ReportMetric(batch.rate()/r1, "x-batch")
			b.ReportMetric(conc.rate()/r1, "x-conc")
			b.ReportMetric(median(wallRatios), "conc/batch")
			b.ReportMetric(median(cpuRatios), "conc/batch-cpu")
			b.ReportMetric(float64(batch.steps)/float64(b.N), "steps-8batch")
			b.ReportMetric(float64(conc.steps)/float64(b.N), "steps-8conc")
		})
	}
}

// genRun is the tokens, wall time, CPU time and batcher steps of runs.
type genRun struct {
	tokens int
	wall   time.Duration
	cpu    float64
	steps  int64
}

// measure runs fn, which returns the tokens it generated on m.
func measure(m *Model, fn func() int) genRun {
	s0, c0, t0 := m.batch.steps.Load(), processCPU(), time.Now()
	n := fn()
	return genRun{tokens: n, wall: time.Since(t0), cpu: processCPU() - c0, steps: m.batch.steps.Load() - s0}
}

func (g *genRun) add(m *Model, fn func() int) { g.plus(measure(m, fn)) }

func (g *genRun) plus(o genRun) {
	g.tokens, g.wall, g.cpu, g.steps = g.tokens+o.tokens, g.wall+o.wall, g.cpu+o.cpu, g.steps+o.steps
}

func (g genRun) rate() float64    { return float64(g.tokens) / g.wall.Seconds() }
func (g genRun) cpuRate() float64 { return float64(g.tokens) / g.cpu }

// generateConc runs 8 concurrent requests of one sample each with the
// prompt and returns the tokens produced.
func generateConc(b *testing.B, m *Model, prompt []int, tokens int, seed int64) int {
	var wg sync.WaitGroup
	var n atomic.Int64
	for i := range 8 {
		wg.Go(func() { n.Add(int64(generate(b, m, prompt, 1, tokens, seed*8+int64(i)))) })
	}
	wg.Wait()
	return int(n.Load())
}

// median is the middle value of xs (the mean of the two middle ones for
// an even count).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	return (s[(n-1)/2] + s[n/2]) / 2
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
	return qwen3SmallBF16(b, name), benchTokensLarge, prompt
}

// qwen3SmallBF16 is the Qwen3-0.6B shape with random bfloat16 matrices,
// named name: the bf16 benchmarks' model.
func qwen3SmallBF16(b testing.TB, name string) *Model { return qwen3SmallOf(b, name, "bf16") }

// qwen3SmallOf is qwen3Small with random weights in float32 (dtype "f32")
// or bfloat16 (any other).
func qwen3SmallOf(b testing.TB, name, dtype string) *Model {
	b.Helper()
	c := qwen3Small()
	ts := randomTensors(c, 1)
	if dtype != "f32" {
		matricesToBF16(ts)
	}
	m, err := New(name, c, ts)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// benchDType is the weights' type a benchmark takes from the environment
// variable key: "f32" or "bf16" (unset or anything else).
func benchDType(key string) string {
	if os.Getenv(key) == "f32" {
		return "f32"
	}
	return "bf16"
}

// envInt is the integer in the environment variable key, or def when it
// is unset or not an integer: a benchmark's rounds, tokens or passes.
func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return n
	}
	return def
}

// loadAvg is the machine's three load averages, for a benchmark's log
// ("" where /proc/loadavg cannot be read).
func loadAvg() string {
	s, _ := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(s)); len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return ""
}

// matricesToBF16 replaces every matrix of ts by its bfloat16 rounding
// toward zero (the top 16 bits), as a bf16 checkpoint would hold it, in
// transparent huge pages as loading puts them (loadFile's hugeSlab).
func matricesToBF16(ts Tensors) {
	var slab hugeSlab
	for _, k := range sortedKeys(ts) {
		if t := ts[k]; len(t.Shape) == 2 {
			t.BF16 = hugeSlabAlloc[uint16](&slab, len(t.Data))
			for i, v := range t.Data {
				t.BF16[i] = uint16(math.Float32bits(v) >> 16)
			}
			t.Data = nil
			ts[k] = t
		}
	}
}
