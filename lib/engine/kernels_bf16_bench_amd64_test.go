package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"
)

// BenchmarkBF16Products runs the Qwen3-0.6B products (q, gate, down) over
// 512 tokens and one token, bfloat16 weights on the float32 path (widened
// exactly) and on the bf16 path (AMX where present, and AVX512-BF16),
// interleaved, and reports GFLOP/s of each and the bf16 path's speedup.
func BenchmarkBF16Products(b *testing.B) {
	if !bf16Compute() {
		b.Skip("no AVX512-BF16")
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, sh := range [][3]int{{512, 2048, 1024}, {512, 3072, 1024}, {512, 1024, 3072}, {1, 3072, 1024}, {1, 1024, 3072}} {
		m, rows, cols := sh[0], sh[1], sh[2]
		w, xs := randBF16Mat(rng, rows, cols), randVecs(rng, m, cols)
		ys := newOutputs(m, rows)
		plain := w
		plain.vn = nil
		b.Run(fmtShape(sh), func(b *testing.B) {
			var tf, ta, tv time.Duration
			for b.Loop() {
				t0 := time.Now()
				matMul(plain, xs, ys, false)
				t1 := time.Now()
				withAMX(amxReady(), func() { matMul(w, xs, ys, false) })
				t2 := time.Now()
				withAMX(false, func() { matMul(w, xs, ys, false) })
				tf, ta, tv = tf+t1.Sub(t0), ta+time.Since(t1)-time.Since(t2), tv+time.Since(t2)
			}
			flop := 2 * float64(m*rows*cols) * float64(b.N) / 1e9
			b.ReportMetric(flop/tf.Seconds(), "GFLOP/s-f32path")
			b.ReportMetric(flop/ta.Seconds(), "GFLOP/s-bf16-amx")
			b.ReportMetric(flop/tv.Seconds(), "GFLOP/s-bf16-avx512")
			b.ReportMetric(float64(2*rows*cols)*float64(b.N)/tf.Seconds()/1e9, "GB/s-weights-f32path")
			b.ReportMetric(float64(2*rows*cols)*float64(b.N)/ta.Seconds()/1e9, "GB/s-weights-amx")
		})
	}
}

func fmtShape(sh [3]int) string { return fmt.Sprintf("%dx%dx%d", sh[0], sh[1], sh[2]) }

// BenchmarkPrefillBF16 runs a random Qwen3-0.6B-shaped model three ways,
// interleaved: float32 weights, bfloat16 weights on the float32 path
// (widened exactly in the kernels) and bfloat16 weights on the bf16 path:
// prefill of 512 tokens and decode of 32, in tokens per CPU-second (a
// loaded machine disturbs that less than wall time), without the scalar
// runs of BenchmarkPrefillDecode.
func BenchmarkPrefillBF16(b *testing.B) {
	if !bf16Compute() {
		b.Skip("no AVX512-BF16")
	}
	c := qwen3Small()
	ts := randomTensors(c, 1)
	f32, err := New("qwen3-0.6b-shape", c, ts)
	if err != nil {
		b.Fatal(err)
	}
	matricesToBF16(ts)
	kept, err := New("qwen3-0.6b-shape", c, ts)
	if err != nil {
		b.Fatal(err)
	}
	bf, err := New("qwen3-0.6b-shape", c, ts)
	if err != nil {
		b.Fatal(err)
	}
	bf.w.withBF16Compute()
	prompt := make([]int, prefillTokens)
	for i := range prompt {
		prompt[i] = (i * 7919) % c.VocabSize
	}
	run := func(m *Model, p []int, gen int) float64 {
		c0 := processCPU()
		seed := int64(1)
		if _, err := m.Sample(context.Background(), SampleRequest{Prompt: p, MaxTokens: gen, Temperature: 1, Seed: &seed}); err != nil {
			b.Fatal(err)
		}
		return processCPU() - c0
	}
	models := []*Model{f32, kept, bf}
	names := []string{"f32", "bf16-f32path", "bf16path"}
	pre, dec := make([]float64, 3), make([]float64, 3)
	for b.Loop() {
		for i, m := range models {
			pre[i] += run(m, prompt, 1)
			dec[i] += run(m, prompt[:1], decodeTokens+1) - run(m, prompt[:1], 1)
		}
	}
	n := float64(b.N)
	for i, name := range names {
		b.ReportMetric(n*prefillTokens/pre[i], "prefill-tok/cpu-s-"+name)
		b.ReportMetric(n*decodeTokens/dec[i], "decode-tok/cpu-s-"+name)
	}
}

// BenchmarkBF16Decode streams 112 bfloat16 matrices of 3072 × 1024 (672
// MiB, over twice this VM's 300 MiB L3) through one-token products, as decoding
// does, on the float32 path and on the bf16 path (AMX where present, and
// AVX512-BF16), and reports each as a share of the read bandwidth over
// the bytes it reads (fastestRead: the matrices for the float32 path,
// GB/s-read; their packed copies for the bf16 path, GB/s-read-packed),
// each the mean of the probes before and after the iteration's passes.
func BenchmarkBF16Decode(b *testing.B) {
	if !bf16Compute() {
		b.Skip("no AVX512-BF16")
	}
	rng := rand.New(rand.NewPCG(2, 2))
	ws := make([]mat, 112)
	plain, packed := make([][]uint64, len(ws)), make([][]uint64, len(ws))
	for i := range ws {
		ws[i] = randBF16Mat(rng, 3072, 1024)
		plain[i], packed[i] = bf16Words(ws[i].bf), bf16Words(ws[i].vn)
	}
	xs, ys := randVecs(rng, 1, 1024), newOutputs(1, 3072)
	pass := func(bf bool) time.Duration {
		t0 := time.Now()
		for _, w := range ws {
			if !bf {
				w.vn = nil
			}
			matMul(w, xs, ys, false)
		}
		return time.Since(t0)
	}
	probe := func() (float64, float64) {
		p, _ := fastestRead(plain)
		k, _ := fastestRead(packed)
		return p, k
	}
	var tf, ta, tv time.Duration
	var bw, bwPacked float64
	p0, k0 := probe()
	for b.Loop() {
		tf += pass(false)
		withAMX(amxReady(), func() { ta += pass(true) })
		withAMX(false, func() { tv += pass(true) })
		p1, k1 := probe()
		bw, bwPacked = bw+(p0+p1)/2, bwPacked+(k0+k1)/2
		p0, k0 = p1, k1
	}
	bytes := float64(len(ws)*3072*1024*2) * float64(b.N)
	bw /= float64(b.N)
	bwPacked /= float64(b.N)
	b.ReportMetric(bw/1e9, "GB/s-read")
	b.ReportMetric(bwPacked/1e9, "GB/s-read-packed")
	b.ReportMetric(100*bytes/tf.Seconds()/bw, "%read-f32path")
	b.ReportMetric(100*bytes/ta.Seconds()/bwPacked, "%read-bf16-amx")
	b.ReportMetric(100*bytes/tv.Seconds()/bwPacked, "%read-bf16-avx512")
}

// BenchmarkPrefillBF16Torch runs the bf16 path's prefill of 512 tokens on
// the Qwen3-0.6B shape and PyTorch's bfloat16 prefill (oneDNN;
// testdata/torch_prefill.py, TINKER_BENCH_TORCH) alternately, each
// iteration the engine's best of two runs and PyTorch's best of two
// passes, and reports both rates and their ratio (x-torch above 1: the
// engine is faster), in wall time and per CPU-second: the bf16
// goal without BenchmarkPrefillDecode's float32 and scalar runs.
func BenchmarkPrefillBF16Torch(b *testing.B) {
	if !bf16Compute() || os.Getenv("TINKER_BENCH_TORCH") == "" {
		b.Skip("needs AVX512-BF16 and TINKER_BENCH_TORCH (a Python with torch)")
	}
	c := qwen3Small()
	ts := randomTensors(c, 1)
	matricesToBF16(ts)
	m, err := New("qwen3-0.6b-shape", c, ts)
	if err != nil {
		b.Fatal(err)
	}
	m.w.withBF16Compute()
	ts = nil
	runtime.GC()
	prompt := make([]int, prefillTokens)
	for i := range prompt {
		prompt[i] = (i * 7919) % c.VocabSize
	}
	run := func() (wall, cpu float64) {
		c0, t0 := processCPU(), time.Now()
		seed := int64(1)
		if _, err := m.Sample(context.Background(), SampleRequest{Prompt: prompt, MaxTokens: 1, Temperature: 1, Seed: &seed}); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0).Seconds(), processCPU() - c0
	}
	run()
	var eng, torch torchRate
	for b.Loop() {
		w0, c0 := run()
		w1, c1 := run()
		eng.wall += prefillTokens / min(w0, w1)
		eng.cpu += prefillTokens / min(c0, c1)
		r, _ := torchPrefill(b, "bf16")
		torch.wall += r.wall
		torch.cpu += r.cpu
	}
	n := float64(b.N)
	b.ReportMetric(eng.wall/n, "tok/s-prefill")
	b.ReportMetric(eng.cpu/n, "tok/cpu-s-prefill")
	b.ReportMetric(torch.wall/n, "tok/s-prefill-pytorch")
	b.ReportMetric(torch.cpu/n, "tok/cpu-s-prefill-pytorch")
	b.ReportMetric(eng.wall/torch.wall, "x-pytorch-prefill")
	b.ReportMetric(eng.cpu/torch.cpu, "x-pytorch-prefill-cpu")
}
