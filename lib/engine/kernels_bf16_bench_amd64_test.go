package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
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
	m := qwen3SmallBF16(b, "qwen3-0.6b-shape")
	c := qwen3Small()
	m.w.withBF16Compute()
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

// BenchmarkBF16AVXShare runs the AVX512-BF16 products (the kernels a Zen
// 4 runs) on the Qwen3-0.6B shapes at 512, 128 and 1 tokens, each beside
// the CPU's 512-bit FMA probe, and reports them as a share of the
// VDPBF16PS peak: two multiply-adds a lane, twice the probe's rate (by
// CPU time, which a loaded machine disturbs less than wall time).
func BenchmarkBF16AVXShare(b *testing.B) {
	if !bf16Compute() {
		b.Skip("no AVX512-BF16")
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for _, sh := range [][3]int{{512, 2048, 1024}, {512, 3072, 1024}, {512, 1024, 3072}, {128, 3072, 1024}, {128, 1024, 3072}} {
		m, rows, cols := sh[0], sh[1], sh[2]
		w, xs := randBF16Mat(rng, rows, cols), randVecs(rng, m, cols)
		ys := newOutputs(m, rows)
		b.Run(fmtShape(sh), func(b *testing.B) {
			var cpu, peak float64
			withAMX(false, func() {
				matMul(w, xs, ys, false)
				for b.Loop() {
					_, pc, _ := fmaProbe()
					peak += pc
					c0 := processCPU()
					for range 4 {
						matMul(w, xs, ys, false)
					}
					cpu += processCPU() - c0
				}
			})
			n := float64(b.N)
			flop := 4 * 2 * float64(m*rows*cols) * n / 1e9
			b.ReportMetric(flop/cpu, "GFLOP/cpu-s")
			b.ReportMetric(peak/n, "GFLOP/cpu-s-fma-probe")
			b.ReportMetric(100*flop/cpu/(2*peak/n), "%vdpbf16ps-peak")
		})
	}
}

// BenchmarkBF16AVXShapes compares blockings of the AVX512-BF16 kernels
// (bf16AVX) on the Qwen3-0.6B shapes, interleaved in one process: each
// iteration runs every blocking of TINKER_BF16_AVX ("t,n,n1,chunkKiB"
// separated by spaces; the first is the reference) and reports each one's
// CPU time over the reference's.
func BenchmarkBF16AVXShapes(b *testing.B) {
	if !bf16Compute() {
		b.Skip("no AVX512-BF16")
	}
	cfgs := avxBlockings(b, "4,6,6,512 2,6,6,512")
	rng := rand.New(rand.NewPCG(3, 3))
	for _, sh := range [][3]int{{512, 2048, 1024}, {512, 3072, 1024}, {512, 1024, 3072}, {128, 3072, 1024}, {128, 1024, 3072}, {37, 3072, 1024}} {
		m, rows, cols := sh[0], sh[1], sh[2]
		w, xs := randBF16Mat(rng, rows, cols), randVecs(rng, m, cols)
		ys := newOutputs(m, rows)
		b.Run(fmtShape(sh), func(b *testing.B) {
			cpu := make([]float64, len(cfgs))
			withAMX(false, func() {
				for b.Loop() {
					for i, c := range cfgs {
						bf16AVX = c
						c0 := processCPU()
						for range 3 {
							matMul(w, xs, ys, false)
						}
						cpu[i] += processCPU() - c0
					}
				}
			})
			for i, c := range cfgs[1:] {
				b.ReportMetric(cpu[i+1]/cpu[0], fmt.Sprintf("cpu-%d,%d,%d,%d/ref", c.t, c.n, c.n1, c.chunk>>10))
			}
		})
	}
}

// BenchmarkBF16Peak times VDPBF16PS alone (24 chains, sources in
// registers, or one a broadcast dword) on one core against the 512-bit
// FMA probe on all cores, by CPU time: the instruction's peak as a
// multiple of the FMA's.
func BenchmarkBF16Peak(b *testing.B) {
	if !bf16Compute() {
		b.Skip("no AVX512-BF16")
	}
	x := make([]uint16, 32)
	const iters = 5_000_000
	var reg, bc, fma float64
	for b.Loop() {
		_, pc, _ := fmaProbe()
		fma += pc
		c0 := processCPU()
		avxBF16PeakReg(&x[0], iters)
		c1 := processCPU()
		avxBF16PeakBcst(&x[0], iters)
		reg, bc = reg+c1-c0, bc+processCPU()-c1
	}
	n := float64(b.N)
	flop := 24 * 64 * iters * n / 1e9
	b.ReportMetric(flop/reg, "GFLOP/cpu-s-reg")
	b.ReportMetric(flop/bc, "GFLOP/cpu-s-bcst")
	b.ReportMetric(fma/n, "GFLOP/cpu-s-fma-probe")
	b.ReportMetric(flop/reg/(fma/n), "x-fma-reg")
	b.ReportMetric(flop/bc/(fma/n), "x-fma-bcst")
}

// BenchmarkBF16DecodeShapes is BenchmarkBF16Decode's one-token products
// on the AVX512-BF16 kernels under each blocking of TINKER_BF16_AVX (see
// BenchmarkBF16AVXShapes), interleaved: each one's CPU time over the
// first's, and its share of the read bandwidth over the same packed
// matrices (fastestRead) measured beside it.
func BenchmarkBF16DecodeShapes(b *testing.B) {
	if !bf16Compute() {
		b.Skip("no AVX512-BF16")
	}
	cfgs := avxBlockings(b, "4,6,6,512 4,6,4,512")
	rng := rand.New(rand.NewPCG(2, 2))
	ws := make([]mat, 112)
	packed := make([][]uint64, len(ws))
	for i := range ws {
		ws[i] = randBF16Mat(rng, 3072, 1024)
		packed[i] = bf16Words(ws[i].vn)
	}
	xs, ys := randVecs(rng, 1, 1024), newOutputs(1, 3072)
	cpu, wall := make([]float64, len(cfgs)), make([]float64, len(cfgs))
	var bw float64
	withAMX(false, func() {
		for b.Loop() {
			k, _ := fastestRead(packed)
			bw += k
			for i, c := range cfgs {
				bf16AVX = c
				c0, t0 := processCPU(), time.Now()
				for _, w := range ws {
					matMul(w, xs, ys, false)
				}
				cpu[i] += processCPU() - c0
				wall[i] += time.Since(t0).Seconds()
			}
		}
	})
	bytes := float64(len(ws)*3072*1024*2) * float64(b.N)
	bw /= float64(b.N)
	for i, c := range cfgs {
		name := fmt.Sprintf("%d,%d,%d,%d", c.t, c.n, c.n1, c.chunk>>10)
		b.ReportMetric(100*bytes/wall[i]/bw, "%read-"+name)
		if i > 0 {
			b.ReportMetric(cpu[i]/cpu[0], "cpu-"+name+"/ref")
		}
	}
}

// avxBlockings parses TINKER_BF16_AVX: blockings of the AVX512-BF16
// kernels as "t,n,n1,chunkKiB", separated by spaces. With fewer than two
// it skips the benchmark, naming example as a setting to try; otherwise
// bf16AVX is restored when the benchmark ends.
func avxBlockings(b *testing.B, example string) []struct{ t, n, n1, chunk int } {
	old := bf16AVX
	b.Cleanup(func() { bf16AVX = old })
	var cfgs []struct{ t, n, n1, chunk int }
	for _, f := range strings.Fields(os.Getenv("TINKER_BF16_AVX")) {
		var c struct{ t, n, n1, chunk int }
		if _, err := fmt.Sscanf(f, "%d,%d,%d,%d", &c.t, &c.n, &c.n1, &c.chunk); err != nil {
			b.Fatalf("TINKER_BF16_AVX %q: %v", f, err)
		}
		k := avxBF16Kernels
		if c.t < 1 || c.t >= len(k) || c.n < 1 || c.n >= len(k[0]) || c.n1 < 1 || c.n1 >= len(k[0]) || c.chunk < 1 {
			b.Fatalf("TINKER_BF16_AVX %q: no generated kernel (internal/asmgen/bf16 avxMaxT, avxMaxN)", f)
		}
		c.chunk <<= 10
		cfgs = append(cfgs, c)
	}
	if len(cfgs) < 2 {
		b.Skipf(`TINKER_BF16_AVX=%q compares blockings`, example)
	}
	return cfgs
}
