package engine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Prompt and generation lengths of BenchmarkPrefillDecode.
// The scalar reference runs a shorter prompt and generation: at its speed
// the full ones would take minutes.
const (
	prefillTokens       = 512
	decodeTokens        = 32
	prefillScalarTokens = 64
	decodeScalarTokens  = 4
)

// BenchmarkPrefillDecode runs a random Qwen3-0.6B-shaped model with
// float32 and with bfloat16 weights: prefill tokens/s of a 512-token prompt
// and decode tokens/s of one sequence, with the vector kernels next to the
// scalar ones in the same run (on a 64-token prompt and 4 tokens), and
// decode against the memory-bandwidth limit: the bytes of every weight
// matrix read once per token, at the read bandwidth readBandwidth measures
// just before each decode (this VM's bandwidth drifts by ±15% over
// minutes, so a figure taken at the start put single runs anywhere
// between 70% and 90% of it).
func BenchmarkPrefillDecode(b *testing.B) {
	c := qwen3Small()
	ts := randomTensors(c, 1)
	for _, dtype := range []string{"f32", "bf16", "bf16-compute"} {
		if dtype == "bf16" {
			matricesToBF16(ts)
		}
		if dtype == "bf16-compute" && !bf16Compute() {
			continue // the CPU has no bf16 instructions
		}
		m, err := New("qwen3-0.6b-shape", c, ts)
		if err != nil {
			b.Fatal(err)
		}
		if dtype == "bf16-compute" {
			m.w.withBF16Compute()
		}
		b.Run(dtype, func(b *testing.B) {
			prompt := make([]int, prefillTokens)
			for i := range prompt {
				prompt[i] = (i * 7919) % c.VocabSize
			}
			var cpu float64 // of the current run
			run := func(p []int, gen int) time.Duration {
				c0, t0 := processCPU(), time.Now()
				seed := int64(1)
				if _, err := m.Sample(context.Background(), SampleRequest{Prompt: p, NumSamples: 1, MaxTokens: gen, Temperature: 1, Seed: &seed}); err != nil {
					b.Fatal(err)
				}
				cpu = processCPU() - c0
				return time.Since(t0)
			}
			var pre, dec, preS, decS time.Duration
			var preCPU, preCPUS, bw float64
			for b.Loop() {
				pre += run(prompt, 1)
				preCPU += cpu
				bw += readBandwidth()
				dec += run(prompt[:1], decodeTokens+1) - run(prompt[:1], 1)
				if useSIMD && dtype != "bf16-compute" { // the bf16 path has no scalar twin
					useSIMD = false
					preS += run(prompt[:prefillScalarTokens], 1)
					preCPUS += cpu
					decS += run(prompt[:1], decodeScalarTokens+1) - run(prompt[:1], 1)
					useSIMD = true
				}
			}
			n := float64(b.N)
			bytes := 4.0
			if dtype != "f32" {
				bytes = 2
			}
			bw /= n
			limit := bw / (matrixParams(c) * bytes)
			b.ReportMetric(prefillTokens*n/pre.Seconds(), "tok/s-prefill")
			b.ReportMetric(decodeTokens*n/dec.Seconds(), "tok/s-decode")
			b.ReportMetric(limit, "tok/s-decode-bw-limit")
			b.ReportMetric(100*decodeTokens*n/dec.Seconds()/limit, "%decode-of-limit")
			b.ReportMetric(bw/1e9, "GB/s-read")
			b.ReportMetric(decodeTokens*n/dec.Seconds()*matrixParams(c)*bytes/1e9, "GB/s-decode")
			b.ReportMetric(prefillTokens*n/preCPU, "tok/cpu-s-prefill")
			if torch, ok := torchPrefill(b, dtype); ok {
				b.ReportMetric(torch.wall, "tok/s-prefill-pytorch")
				b.ReportMetric(prefillTokens*n/pre.Seconds()/torch.wall, "x-pytorch-prefill")
				b.ReportMetric(torch.cpu, "tok/cpu-s-prefill-pytorch")
				b.ReportMetric(prefillTokens*n/preCPU/torch.cpu, "x-pytorch-prefill-cpu")
			}
			if preS > 0 {
				b.ReportMetric(prefillScalarTokens*n/preS.Seconds(), "tok/s-prefill-scalar")
				b.ReportMetric(prefillScalarTokens*n/preCPUS, "tok/cpu-s-prefill-scalar")
				b.ReportMetric(decodeScalarTokens*n/decS.Seconds(), "tok/s-decode-scalar")
			}
		})
	}
}

// torchPrefill runs the same prefill in PyTorch (testdata/torch_prefill.py)
// when TINKER_BENCH_TORCH names a Python with torch: in float32 for the
// float32 model, in bfloat16 (oneDNN's bf16 path) for the bfloat16 ones.
func torchPrefill(b *testing.B, dtype string) (torchRate, bool) {
	py := os.Getenv("TINKER_BENCH_TORCH")
	if py == "" {
		return torchRate{}, false
	}
	td := "bf16"
	if dtype == "f32" {
		td = "f32"
	}
	out, err := exec.Command(py, "testdata/torch_prefill.py", td, strconv.Itoa(prefillTokens), "2",
		strconv.Itoa(runtime.GOMAXPROCS(0))).CombinedOutput()
	var r torchRate
	if _, serr := fmt.Sscanf(string(out), "tok/s %g tok/cpu-s %g", &r.wall, &r.cpu); err != nil || serr != nil {
		b.Fatalf("PyTorch prefill: %v %v\n%s", err, serr, out)
	}
	return r, true
}

// matrixParams is the number of weights in the matrices a token's forward
// pass reads: every layer's projections and the (possibly tied) lm_head.
func matrixParams(c Config) float64 {
	h, qd, kvd, in := float64(c.Hidden), float64(c.Heads*c.HeadDim), float64(c.KVHeads*c.HeadDim), float64(c.Intermediate)
	return float64(c.Layers)*(h*qd*2+h*kvd*2+3*h*in) + float64(c.VocabSize)*h
}

// readBandwidth is the read bandwidth decoding can reach, in bytes/s:
// the best of five passes over a 1 GiB buffer (over three times this
// VM's 300 MiB L3), split over every core, each core reading its part
// with the probe (readProbes) that read fastest when first timed
// (bestReadProbe). One 512-bit stream per core read 12.9-18.9 GB/s here,
// at times less than decoding itself streamed; the limit is what the
// cores can keep in flight, so the probe keeps the most lines in flight
// it can: several streams per core, software prefetch across pages.
func readBandwidth() float64 { return bandwidthWith(bestReadProbe().read) }

// readProbe is one way to sum a core's part of the buffer.
type readProbe struct {
	name string
	read func([]uint64) uint64
}

// bestReadProbe times every probe (best of two passes) once per process
// and keeps the fastest.
var bestReadProbe = sync.OnceValue(func() readProbe {
	var best readProbe
	top := 0.0
	for _, p := range readProbes() {
		if bw := bandwidthPasses(p.read, 2); bw > top {
			best, top = p, bw
		}
	}
	return best
})

// bandwidthWith is readBandwidth with sum reading each core's part.
func bandwidthWith(sum func([]uint64) uint64) float64 { return bandwidthPasses(sum, 5) }

// bandwidthPasses is the best of passes parallel reads of the buffer.
func bandwidthPasses(sum func([]uint64) uint64, passes int) float64 {
	buf := bandwidthBuf()
	procs := runtime.GOMAXPROCS(0)
	sums := make([]uint64, procs)
	chunk := len(buf) / procs &^ 255
	best := 0.0
	for range passes {
		var wg sync.WaitGroup
		t0 := time.Now()
		for p := range procs {
			wg.Go(func() { sums[p] = sum(buf[p*chunk : (p+1)*chunk]) })
		}
		wg.Wait()
		best = max(best, float64(8*chunk*procs)/time.Since(t0).Seconds())
	}
	return best
}

// BenchmarkReadBandwidth reports every probe's bandwidth (best of five
// passes; GB/s-<probe>) beside the one readBandwidth keeps, in the same
// run, and the scalar 64-bit sum for comparison.
func BenchmarkReadBandwidth(b *testing.B) {
	ps := readProbes()
	rates := make([]float64, len(ps))
	var scalar float64
	for b.Loop() {
		for i, p := range ps {
			rates[i] += bandwidthWith(p.read)
		}
		scalar += bandwidthWith(sumWords)
	}
	best := 0.0
	for i, p := range ps {
		b.ReportMetric(rates[i]/float64(b.N)/1e9, "GB/s-"+p.name)
		best = max(best, rates[i])
	}
	b.ReportMetric(best/float64(b.N)/1e9, "GB/s-read")
	b.ReportMetric(scalar/float64(b.N)/1e9, "GB/s-read-scalar")
}

// bandwidthBuf is readBandwidth's buffer, written once (so its pages are
// real) and kept for the process.
var bandwidthBuf = sync.OnceValue(func() []uint64 {
	buf := make([]uint64, 128<<20)
	for i := range buf {
		buf[i] = uint64(i)
	}
	return buf
})

func sumWords(s []uint64) uint64 {
	var a, b, c, d uint64
	for i := 0; i+4 <= len(s); i += 4 {
		a, b, c, d = a+s[i], b+s[i+1], c+s[i+2], d+s[i+3]
	}
	return a + b + c + d
}

// TestReadProbesSum requires every bandwidth probe to read every word of
// its part once: a probe that skipped lines would report a bandwidth it
// never read.
func TestReadProbesSum(t *testing.T) {
	s := make([]uint64, 256*8*3+256)
	for i := range s {
		s[i] = uint64(i)*0x9e3779b97f4a7c15 + 1
	}
	want := sumWords(s)
	for _, p := range readProbes() {
		if got := p.read(s); got != want {
			t.Errorf("probe %s: sum %#x, want %#x", p.name, got, want)
		}
	}
}
