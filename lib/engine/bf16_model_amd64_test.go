package engine

import (
	"context"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// loadBF16Pair loads a tiny model written in bfloat16 twice: on the
// float32 path (bfloat16 weights widened exactly) and on the bf16 path.
func loadBF16Pair(t *testing.T, name string) (f32, bf *Model) {
	t.Helper()
	dir := t.TempDir()
	writeModelDir(t, dir, name, safetensors.BF16, 1)
	f32, err := LoadDirWith(dir, LoadOptions{BF16: BF16Keep})
	if err != nil {
		t.Fatal(err)
	}
	if bf, err = LoadDirWith(dir, LoadOptions{BF16Compute: true}); err != nil {
		t.Fatal(err)
	}
	return f32, bf
}

// TestBF16ModelCloseToFloat32: a bf16 model's prompt logprobs on the bf16
// path stay within bf16 precision of the float32 path's, and they differ
// (the path is really taken).
func TestBF16ModelCloseToFloat32(t *testing.T) {
	needBF16(t)
	for _, name := range []string{"tinker-local/tiny-llama", "tinker-local/tiny-qwen3"} {
		f32, bf := loadBF16Pair(t, name)
		prompt := mustLoad(t, name).Tokenizer().Encode("the bf16 path, rounded activations and float32 sums", true)
		want, got := promptLogprobs(t, f32, prompt), promptLogprobs(t, bf, prompt)
		var worst float64
		for i := range got {
			worst = math.Max(worst, math.Abs(got[i]-want[i]))
		}
		t.Logf("%s: max prompt logprob difference %.3g", name, worst)
		if worst > 0.05 || worst == 0 {
			t.Errorf("%s: bf16 path's prompt logprobs differ from float32's by %g (want 0 < d <= 0.05)", name, worst)
		}
	}
}

// TestBF16ModelPrefillMatchesDecode: tokens generated one at a time get
// the logprobs that a prefill of the whole sequence gives them, bit for
// bit, and a prompt's logprobs do not depend on what follows it.
func TestBF16ModelPrefillMatchesDecode(t *testing.T) {
	needBF16(t)
	withAMX(false, func() { checkPrefillMatchesDecode(t) })
	if amxReady() {
		withAMX(true, func() { checkPrefillMatchesDecode(t) })
	}
}

// checkPrefillMatchesDecode runs tiny-qwen3 and tiny-gpt-oss (attention
// in sliding windows with sinks), decoding past two 32-key chunks of the
// bf16 attention.
func checkPrefillMatchesDecode(t *testing.T) {
	for _, name := range []string{"tinker-local/tiny-qwen3", "tinker-local/tiny-gpt-oss"} {
		checkPrefillMatchesDecodeOf(t, name)
	}
}

func checkPrefillMatchesDecodeOf(t *testing.T, name string) {
	_, bf := loadBF16Pair(t, name)
	prompt := mustLoad(t, name).Tokenizer().Encode("decode and prefill agree", true)
	seed := int64(3)
	r := sample(t, bf, SampleRequest{Prompt: prompt, MaxTokens: 48, Temperature: 1, Seed: &seed, ModelLogprobs: true})
	s := r.Sequences[0]
	full := append(slices.Clone(prompt), s.Tokens...)
	pl := promptLogprobs(t, bf, full)
	for i, lp := range s.Logprobs {
		if got := float32(pl[len(prompt)-1+i]); got != lp {
			t.Fatalf("%s: generated token %d: logprob %g when decoded, %g in a prefill", name, i, lp, got)
		}
	}
	short := promptLogprobs(t, bf, prompt)
	for i := range short {
		if short[i] != pl[i] {
			t.Fatalf("%s: prompt position %d: logprob %g alone, %g with more tokens after it", name, i+1, short[i], pl[i])
		}
	}
}

// TestBF16TrainingGradients: LoRA gradients of a bf16 model on the bf16
// path (forward and the backward's input gradients) stay within bf16
// precision of the float32 path's, and do not depend on how the data are
// split into calls or on the thread count.
func TestBF16TrainingGradients(t *testing.T) {
	needBF16(t)
	f32, bf := loadBF16Pair(t, "tinker-local/tiny-qwen3")
	cfg := LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 2}
	loss, _ := NewLoss(LossCrossEntropy, nil)
	data := forLoss(testData(f32.cfg.VocabSize, 3, 9, 20, 4), LossCrossEntropy)
	grads := func(m *Model, calls [][]Datum) [][]float32 {
		tr := mustTrainer(t, m, cfg)
		randomizeB(t, tr, 1, 0.05)
		for _, d := range calls {
			if _, err := tr.ForwardBackward(context.Background(), loss, d); err != nil {
				t.Fatal(err)
			}
		}
		return gradBits(tr)
	}
	want, got := grads(f32, [][]Datum{data}), grads(bf, [][]Datum{data})
	worst := 0.0
	defer func() { t.Logf("worst relative L2 gradient difference %.3g", worst) }()
	for i := range want {
		var d2, n2 float64
		for j := range want[i] {
			d := float64(got[i][j]) - float64(want[i][j])
			d2, n2 = d2+d*d, n2+float64(want[i][j])*float64(want[i][j])
		}
		rel := math.Sqrt(d2 / n2)
		worst = math.Max(worst, rel)
		if rel > 0.03 || d2 == 0 {
			t.Errorf("tensor %d: bf16 path's gradient is %.3g from float32's (relative L2; want 0 < d <= 0.03)", i, rel)
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	split := grads(bf, [][]Datum{data[:1], data[1:2], data[2:]})
	for i := range got {
		if !slices.Equal(got[i], split[i]) {
			t.Fatalf("tensor %d: bf16-path gradients differ between one call and three", i)
		}
	}
	if !amxReady() {
		return
	}
	withAMX(false, func() { // the AVX512-BF16 kernels, as on a Zen 4
		one, three := grads(bf, [][]Datum{data}), grads(bf, [][]Datum{data[:1], data[1:2], data[2:]})
		for i := range one {
			if !slices.Equal(one[i], three[i]) {
				t.Fatalf("AVX512-BF16: tensor %d: gradients differ between one call and three", i)
			}
		}
	})
}

// TestPoolBF16Compute: the server's pool passes its options on, so
// `tinker serve --bf16-compute` loads bf16 checkpoints onto the bf16 path.
func TestPoolBF16Compute(t *testing.T) {
	needBF16(t)
	dir := t.TempDir()
	writeModelDir(t, dir, "tinker-local/tiny-qwen3", safetensors.BF16, 1)
	for _, on := range []bool{false, true} {
		p := &Pool{Dirs: map[string]string{"me/bf16": dir}, Options: LoadOptions{BF16Compute: on}}
		m, err := p.Model("me/bf16")
		if err != nil {
			t.Fatal(err)
		}
		if got := m.w.layers[0].q.vn != nil; got != on {
			t.Errorf("BF16Compute %v: layer 0's q on the bf16 path = %v", on, got)
		}
	}
}

// TestBF16ComputeOneCopy: on the bf16 path every layer matrix and the
// lm_head keep only their packed copy (no row-major bfloat16 or float32
// one beside it), and the embedding keeps its rows.
func TestBF16ComputeOneCopy(t *testing.T) {
	needBF16(t)
	for _, name := range []string{"tinker-local/tiny-qwen3", "tinker-local/tiny-gpt-oss"} {
		_, bf := loadBF16Pair(t, name)
		w := bf.w
		ms := []mat{w.lmHead}
		for _, l := range w.layers {
			ms = append(ms, l.q, l.k, l.v, l.o, l.gate, l.up, l.down)
			if l.moe != nil {
				for _, x := range l.moe.experts {
					ms = append(ms, x.gate, x.up, x.down)
				}
			}
		}
		for i, m := range ms {
			if m.rows == 0 {
				continue // a dense slot of a mixture-of-experts layer
			}
			if m.vn == nil || m.bf != nil || m.data != nil {
				t.Fatalf("%s: matrix %d (%d×%d): packed %v, row-major bf16 %v, float32 %v; want only the packed copy",
					name, i, m.rows, m.cols, m.vn != nil, m.bf != nil, m.data != nil)
			}
		}
		if w.embed.bf == nil {
			t.Fatalf("%s: the embedding lost its rows", name)
		}
	}
}

// TestBF16WidePrefillMatchesDecode: on a model wide enough that a
// prefill's norms, rotations, SwiGLU and roundings are split over the
// cores and q/k/v and gate/up share one rounding and one fork
// (matMulBF16Group), a prompt's logprobs have the same bits on one
// thread and on three, and decoding gives the tokens it generates the
// logprobs a prefill gives them.
func TestBF16WidePrefillMatchesDecode(t *testing.T) {
	m, c := bf16ComputeQwen3(t, "wide-bf16", 1024, 1536, 5)
	prompt := make([]int, 200)
	for i := range prompt {
		prompt[i] = (i*37 + 11) % c.VocabSize
	}
	prev := runtime.GOMAXPROCS(1)
	one := promptLogprobs(t, m, prompt)
	runtime.GOMAXPROCS(3)
	three := promptLogprobs(t, m, prompt)
	runtime.GOMAXPROCS(prev)
	if !slices.Equal(one, three) {
		t.Fatal("a 200-token prompt's logprobs differ between one thread and three")
	}
	seed := int64(4)
	r := sample(t, m, SampleRequest{Prompt: prompt, MaxTokens: 6, Temperature: 1, Seed: &seed})
	full := promptLogprobs(t, m, append(slices.Clone(prompt), r.Sequences[0].Tokens...))
	for i, lp := range r.Sequences[0].Logprobs {
		if got := float32(full[len(prompt)-1+i]); got != lp {
			t.Fatalf("generated token %d: logprob %g when decoded, %g in a prefill", i, lp, got)
		}
	}
}

// bf16ComputeQwen3 is a two-layer Qwen3 of the given widths (4 heads of
// 64, 2 KV heads, a vocabulary of 256) with seeded random bfloat16
// matrices on the bf16 compute path; the test is skipped on a CPU
// without AVX512-BF16.
func bf16ComputeQwen3(t *testing.T, name string, hidden, inter int, seed uint64) (*Model, Config) {
	t.Helper()
	needBF16(t)
	c := Config{Shape: models.Shape{Family: models.Qwen3, VocabSize: 256, Hidden: hidden, Intermediate: inter,
		Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, RMSNormEps: 1e-6, RopeTheta: 10000,
		MaxPositionEmbeddings: 4096}, BOSTokenID: -1}
	ts := randomTensors(c, seed)
	matricesToBF16(ts)
	m, err := New(name, c, ts)
	if err != nil {
		t.Fatal(err)
	}
	m.w.withBF16Compute()
	return m, c
}
