package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
)

// qwen3Small is the shape of Qwen3-0.6B (hf:Qwen/Qwen3-0.6B/config.json).
func qwen3Small() Config {
	return Config{Shape: models.Shape{Family: models.Qwen3, VocabSize: 151936, Hidden: 1024, Intermediate: 3072,
		Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128, RMSNormEps: 1e-6, RopeTheta: 1000000, TieWordEmbeddings: true,
		MaxPositionEmbeddings: 40960}, BOSTokenID: -1}
}

// stepFLOPs counts 2 FLOPs per multiply-add of the products a training
// step runs over seqs sequences of n tokens (rank-r LoRA on every matrix),
// the figure the MFU divides by time:
//   - the base matrices forward (params·tokens) and their input gradients
//     backward (the same, less layer 0's q, k and v, whose input gradient
//     nothing needs: backwardLayer skips them);
//   - causal attention over the n(n+1)/2 query–key pairs of each head: the
//     forward's scores and weighted values, and the backward's five
//     products (scores recomputed, datt·v, dq, dk, dv): 7 products;
//   - LoRA: A·x and B·(A·x) forward, r·(in+out) per token; backward Bᵀ·dy,
//     the two weight gradients and Aᵀ·dt, 2r·(in+out), less layer 0's q, k
//     and v Aᵀ·dt.
//
// Norms, rotary, SwiGLU, the loss head's softmax and AdamW are not
// counted; nor is a recomputing datum's second forward (recompute.go).
func stepFLOPs(c Config, r, seqs, n int) float64 {
	h, qd, kvd, in := float64(c.Hidden), float64(c.Heads*c.HeadDim), float64(c.KVHeads*c.HeadDim), float64(c.Intermediate)
	layers, rf, nf := float64(c.Layers), float64(r), float64(n)
	perLayer := h*qd*2 + h*kvd*2 + 3*h*in
	matParams := layers*perLayer + float64(c.VocabSize)*h
	loraDims := layers*(2*(h+qd)+2*(h+kvd)+3*(h+in)) + h + float64(c.VocabSize)
	qkvIn := h * (qd + 2*kvd) // layer 0's skipped input gradients (base), and 3 LoRA A's of h columns
	macs := 2*matParams - qkvIn + 3*rf*loraDims - 3*rf*h
	pairs := nf * (nf + 1) / 2
	attn := 7 * layers * qd * pairs
	return 2 * float64(seqs) * (macs*nf + attn)
}

// TestStepFLOPsCountsTheStepsProducts counts the products of a step the
// other way round, from the model's and the trainer's matrices and a loop
// over attention's query–key pairs, and requires stepFLOPs' figure.
func TestStepFLOPsCountsTheStepsProducts(t *testing.T) {
	for _, name := range []string{models.TinyQwen3, models.TinyLlama} {
		m := mustLoad(t, name)
		c, r, seqs, n := m.cfg, 4, 3, 37
		tr := mustTrainer(t, m, LoRAConfig{Rank: r, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 1})
		var macs float64 // per token
		count := func(w mat, mod *trainModule, inputGrad bool) {
			in, out := float64(w.cols), float64(w.rows)
			macs += in * out                                               // forward
			macs += float64(r) * (in + out)                                // A·x, B·(A·x)
			macs += float64(mod.b.rows*mod.b.cols + mod.a.rows*mod.a.cols) // weight gradients
			macs += float64(r) * out                                       // Bᵀ·dy
			if inputGrad {
				macs += in*out + float64(r)*in // Wᵀ·dy, Aᵀ·dt
			}
		}
		for li, lw := range m.w.layers {
			tl := tr.layers[li]
			count(lw.q, tl.q, li > 0)
			count(lw.k, tl.k, li > 0)
			count(lw.v, tl.v, li > 0)
			for _, p := range []struct {
				w   mat
				mod *trainModule
			}{{lw.o, tl.o}, {lw.gate, tl.gate}, {lw.up, tl.up}, {lw.down, tl.down}} {
				count(p.w, p.mod, true)
			}
		}
		count(m.w.lmHead, tr.head, true)
		var pairs float64
		for i := range n {
			pairs += float64(i + 1)
		}
		attn := 7 * float64(c.Layers*c.Heads*c.HeadDim) * pairs // 2 products forward, 5 backward
		want := 2 * float64(seqs) * (macs*float64(n) + attn)
		if got := stepFLOPs(c, r, seqs, n); math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s: stepFLOPs = %g, counted %g", name, got, want)
		}
	}
}

// BenchmarkTrainStep reports a training step (forward_backward over
// sequences of 128 tokens, and on the 0.6B widths with 4 layers of 2 × 512
// and 1 × 2048, and on all 28 layers of 2 × 512, rank-32 LoRA on every
// target, then optim_step), one step per b.N (-benchtime 5x runs five):
// the median step in seconds of wall and CPU time and in tokens/s, the
// GFLOP/s it implies (stepFLOPs), the engine's matrix product peak
// measured in the same run (the model's largest layer matrix against a
// batch of 128 vectors, all cores) with their ratio, and the model FLOPs
// utilisation: each step's GFLOP/s against the widest FMA loop's (512-bit
// where the CPU has it, on all cores) measured just before and after that
// step (timedSteps), as the median, least and greatest over the steps
// (%MFU by wall time, %MFU-cpu per CPU-second of both). Every step's
// figures are logged. In a SIMD build the same step of a built-in model
// also runs once on the scalar kernels (tok/s-scalar, over the first
// sequence only, to keep the run short; not with -short, which leaves a
// CPU profile to the fast kernels). The Qwen3-0.6B-shaped model (random weights) runs 2 sequences
// per step instead of 8 to keep the run short; the per-token cost does not
// depend on the batch.
func BenchmarkTrainStep(b *testing.B) {
	cases := []struct {
		name           string
		seqs, n, layer int // layers of the 0.6B widths; 0 for a built-in model
	}{{models.TinyLlama, 8, 128, 0}, {models.TinyQwen3, 8, 128, 0}, {"qwen3-0.6b-shape", 2, 128, 28},
		{"qwen3-wide4-2x512", 2, 512, 4}, {"qwen3-wide4-1x2048", 1, 2048, 4}, {"qwen3-0.6b-shape-2x512", 2, 512, 28}}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			m := benchStepModel(b, tc.name, tc.layer)
			c, n := m.cfg, tc.n
			peak := matMulPeak(c)
			tr := mustTrainer(b, m, LoRAConfig{Rank: 32, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 1})
			loss, _ := NewLoss(LossCrossEntropy, nil)
			data := forLoss(testData(min(c.VocabSize, 256), 3, slices.Repeat([]int{n}, tc.seqs)...), LossCrossEntropy)
			step := func(data []Datum) {
				if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
					b.Fatal(err)
				}
				if _, err := tr.OptimStep(DefaultAdamParams()); err != nil {
					b.Fatal(err)
				}
			}
			step(data) // sizes the scratch arena
			steps := timedSteps(b, func() { step(data) })
			flop, tokens := stepFLOPs(c, 32, tc.seqs, n), tc.seqs*n
			wall, cpu := reportSteps(b, steps, flop, tokens)
			// The scalar kernels take tens of times longer: only on the
			// built-in models. amd64's scalar kernels round each
			// multiply-add in software (fma32Soft), so the 28-layer shape's
			// one sequence took over ten minutes on a Zen 3 host.
			if simdOK && !testing.Short() && tc.layer == 0 {
				useSIMD = false
				c0, t0 := processCPU(), time.Now()
				step(data[:1])
				scalar, scalarCPU := time.Since(t0).Seconds(), processCPU()-c0
				useSIMD = true
				b.ReportMetric(float64(n)/scalar, "tok/s-scalar")
				b.ReportMetric(float64(tc.seqs)*scalar/wall, "x-scalar")
				b.ReportMetric(float64(n)/scalarCPU, "tok/cpu-s-scalar")
			}
			if runs, ok := torchRuns(b, c, tc.seqs, n, len(steps)); ok {
				torch := medianRate(runs)
				b.ReportMetric(torch.wall, "tok/s-pytorch")
				b.ReportMetric(float64(tokens)/wall/torch.wall, "x-pytorch")
				b.ReportMetric(torch.cpu, "tok/cpu-s-pytorch")
				b.ReportMetric(float64(tokens)/cpu/torch.cpu, "x-pytorch-cpu")
				if len(runs) > 1 {
					lo, hi := slices.MinFunc(runs, byCPU), slices.MaxFunc(runs, byCPU)
					b.ReportMetric(float64(tokens)/cpu/hi.cpu, "x-pytorch-cpu-min")
					b.ReportMetric(float64(tokens)/cpu/lo.cpu, "x-pytorch-cpu-max")
				}
			}
			torchPairs(b, c, tc.seqs, n, tokens, func() { step(data) })
			gflops := flop / wall / 1e9
			b.ReportMetric(gflops, "GFLOP/s")
			b.ReportMetric(peak.wall, "GFLOP/s-matmul-peak")
			b.ReportMetric(gflops/peak.wall, "x-of-peak")
			b.ReportMetric(flop/cpu/1e9, "GFLOP/cpu-s")
			b.ReportMetric(peak.cpu, "GFLOP/cpu-s-matmul-peak")
			if _, _, bits := fmaProbe(); bits > 0 {
				b.ReportMetric(float64(bits), "fma-peak-bits")
			}
		})
	}
}

// benchStepModel is BenchmarkTrainStep's model: the named built-in one, or
// with layers > 0 a random model of the 0.6B widths with that many layers.
func benchStepModel(b *testing.B, name string, layers int) *Model {
	if layers == 0 {
		return mustLoad(b, name)
	}
	c := qwen3Small()
	c.Layers = layers
	m, err := New(name, c, randomTensors(c, 1))
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// torchTokS runs the same training step in PyTorch
// (testdata/torch_train_step.py) when TINKER_BENCH_TORCH names a Python
// with torch, on GOMAXPROCS threads, steps times after a warm-up, and
// returns its tokens per second of wall time and of process CPU time, each
// from the median step.
func torchTokS(b *testing.B, c Config, seqs, n, steps int) (torchRate, bool) {
	py := os.Getenv("TINKER_BENCH_TORCH")
	if py == "" {
		return torchRate{}, false
	}
	out, err := exec.Command(py, "testdata/torch_train_step.py", torchConfig(c), strconv.Itoa(seqs), strconv.Itoa(n),
		strconv.Itoa(max(steps, 1)), strconv.Itoa(runtime.GOMAXPROCS(0))).CombinedOutput()
	var r torchRate
	if _, serr := fmt.Sscanf(string(out), "tok/s %g tok/cpu-s %g", &r.wall, &r.cpu); err != nil || serr != nil {
		b.Fatalf("PyTorch step: %v %v\n%s", err, serr, out)
	}
	return r, true
}

// torchRuns is torchTokS in TINKER_BENCH_TORCH_RUNS processes (default
// 1), one after another, each logged: PyTorch's step moves between
// processes by more than within one (73.7-89.2 tok/s in three runs back
// to back on the Zen 3 host, 2026-12-01), so a ratio from one process can
// be a tenth off.
func torchRuns(b *testing.B, c Config, seqs, n, steps int) ([]torchRate, bool) {
	runs := benchCount(b, "TINKER_BENCH_TORCH_RUNS", 1)
	var rs []torchRate
	for i := range runs {
		r, ok := torchTokS(b, c, seqs, n, steps)
		if !ok {
			return nil, false
		}
		b.Logf("PyTorch run %d: %.2f tok/s, %.2f tok/cpu-s", i, r.wall, r.cpu)
		rs = append(rs, r)
	}
	return rs, true
}

// torchPairs alternates one engine step with one PyTorch process
// (torchTokS, one step after its warm-up) TINKER_BENCH_TORCH_PAIRS times,
// the order swapping every pair, and reports the median, least and
// greatest of the pairs' PyTorch ÷ engine ratios in CPU time
// (x-pytorch-cpu-paired) and the median in wall time. The host's speed
// moves within minutes on a shared VM and moves PyTorch's step more than
// the engine's (docs/performance.md, "AMD EPYC (Zen 3, AVX2 only), this
// version"), so a ratio of neighbours says more than one against PyTorch
// processes run after all the engine's steps.
func torchPairs(b *testing.B, c Config, seqs, n, tokens int, step func()) {
	pairs := benchCount(b, "TINKER_BENCH_TORCH_PAIRS", 0)
	if pairs == 0 || os.Getenv("TINKER_BENCH_TORCH") == "" {
		return
	}
	var wall, cpu []float64
	for i := range pairs {
		var torch torchRate
		if i%2 == 1 {
			torch, _ = torchTokS(b, c, seqs, n, 1)
		}
		c0, t0 := processCPU(), time.Now()
		step()
		ew, ec := time.Since(t0).Seconds(), processCPU()-c0
		if i%2 == 0 {
			torch, _ = torchTokS(b, c, seqs, n, 1)
		}
		wall = append(wall, float64(tokens)/ew/torch.wall)
		cpu = append(cpu, float64(tokens)/ec/torch.cpu)
		b.Logf("pair %d: engine %.3f s, %.3f cpu-s; PyTorch %.2f tok/s, %.2f tok/cpu-s; PyTorch ÷ engine %.3f wall, %.3f CPU",
			i, ew, ec, torch.wall, torch.cpu, wall[i], cpu[i])
	}
	b.ReportMetric(median(cpu), "x-pytorch-cpu-paired")
	b.ReportMetric(slices.Min(cpu), "x-pytorch-cpu-paired-min")
	b.ReportMetric(slices.Max(cpu), "x-pytorch-cpu-paired-max")
	b.ReportMetric(median(wall), "x-pytorch-paired")
}

// benchCount is the count the environment variable key gives, def when
// it is unset; anything but a count of 1 or more fails the benchmark.
func benchCount(b *testing.B, key string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a count of 1 or more", key, v)
	}
	return n
}

// byCPU orders PyTorch's runs by their rate per CPU-second.
func byCPU(a, b torchRate) int { return cmp.Compare(a.cpu, b.cpu) }

// medianRate is the median of the runs' wall rates and, apart, of their
// CPU rates (the upper middle of an even count).
func medianRate(rs []torchRate) torchRate {
	w, c := make([]float64, len(rs)), make([]float64, len(rs))
	for i, r := range rs {
		w[i], c[i] = r.wall, r.cpu
	}
	slices.Sort(w)
	slices.Sort(c)
	return torchRate{w[len(w)/2], c[len(c)/2]}
}

// torchConfig is the model shape torch_train_step.py takes, as JSON.
func torchConfig(c Config) string {
	cfg, _ := json.Marshal(map[string]any{"Family": c.Family, "VocabSize": c.VocabSize, "Hidden": c.Hidden,
		"Intermediate": c.Intermediate, "Layers": c.Layers, "Heads": c.Heads, "KVHeads": c.KVHeads,
		"HeadDim": c.HeadDim, "RopeTheta": c.RopeTheta})
	return string(cfg)
}

// torchRate is the PyTorch step's tokens per second of wall and CPU time.
type torchRate struct{ wall, cpu float64 }

type peakRate struct{ wall, cpu float64 }

// matMulPeak measures the engine's matrix product on the model's largest
// layer matrix (intermediate × hidden) against 128 vectors: the best of 5
// runs in GFLOP/s of wall time and of process CPU time.
func matMulPeak(c Config) peakRate {
	w, _, _ := benchMat(c.Intermediate, c.Hidden)
	xs, ys := rowsOf(make([]float32, 128*c.Hidden), 128, c.Hidden), rowsOf(make([]float32, 128*c.Intermediate), 128, c.Intermediate)
	r := newRNG(2)
	for _, x := range xs {
		fill(x, r, 1)
	}
	flop := 2 * float64(c.Intermediate*c.Hidden*128)
	var best peakRate
	for range 5 {
		c0 := processCPU()
		t0 := time.Now()
		matMul(w, xs, ys, false)
		best.wall = max(best.wall, flop/time.Since(t0).Seconds()/1e9)
		best.cpu = max(best.cpu, flop/(processCPU()-c0)/1e9)
	}
	return best
}

// BenchmarkBackwardProducts reports GFLOP/s of the backward products on
// Qwen3-0.6B shapes against 128 vectors: matMulT (input gradients through
// a base matrix, float32 and bfloat16, and through a rank-32 LoRA B) and
// outerAcc (LoRA weight gradients), with the assembly tiles, next to the
// archsimd kernels (in a GOEXPERIMENT=simd build) and the scalar ones in
// the same run. Rates are per second of process CPU time, the best of a
// few runs, which a shared machine disturbs less than wall time (run it
// with -cpu 1).
func BenchmarkBackwardProducts(b *testing.B) {
	const m = 128
	r := newRNG(5)
	rows := func(n, width int) [][]float32 {
		rs := rowsOf(make([]float32, n*width), n, width)
		for _, x := range rs {
			fill(x, r, 1)
		}
		return rs
	}
	cases := []struct {
		name       string
		rows, cols int
		outer, bf  bool
	}{
		{"matMulT-3072x1024", 3072, 1024, false, false},
		{"matMulT-1024x3072", 1024, 3072, false, false},
		{"matMulT-1024x3072-bf16", 1024, 3072, false, true},
		{"matMulT-loraB-3072x32", 3072, 32, false, false},
		{"matMulT-loraA-32x1024", 32, 1024, false, false},
		{"outerAcc-3072x32", 3072, 32, true, false},
		{"outerAcc-32x1024", 32, 1024, true, false},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			w, _, _ := benchMat(tc.rows, tc.cols)
			if tc.bf {
				w.bf = truncBF16(w.data)
				w.data = nil
			}
			ys, xs := rows(m, tc.rows), rows(m, tc.cols)
			dst := make([]float32, tc.rows*tc.cols)
			run := func() {
				if tc.outer {
					outerAcc(dst, tc.rows, tc.cols, ys, xs)
				} else {
					matMulT(w, ys, xs, true)
				}
			}
			rate := func(asm, vec bool, reps int) float64 {
				defer func(a, a2, s bool) { bwdAsm, bwdAVX2, useSIMD = a, a2, s }(bwdAsm, bwdAVX2, useSIMD)
				bwdAsm, bwdAVX2, useSIMD = asm && bwdAsm, asm && bwdAVX2, vec && simdOK
				best := 0.0
				for range reps {
					c0 := processCPU()
					run()
					best = max(best, 2*float64(tc.rows*tc.cols*m)/(processCPU()-c0)/1e9)
				}
				return best
			}
			var asm, vec float64
			for b.Loop() {
				asm = max(asm, rate(true, true, 1))
				if simdOK {
					vec = max(vec, rate(false, true, 1))
				}
			}
			b.ReportMetric(asm, "GFLOP/cpu-s")
			if simdOK {
				b.ReportMetric(vec, "GFLOP/cpu-s-archsimd")
				b.ReportMetric(asm/vec, "x-archsimd")
			}
			b.ReportMetric(rate(false, false, 1), "GFLOP/cpu-s-scalar")
		})
	}
}
