package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// smallConfig is a model small enough for finite differences: two layers,
// grouped-query attention with head_dim ≠ hidden/heads, Llama 3.1 rotary
// scaling with all three bands in use (tied embeddings) or Qwen3's q/k
// norms (untied lm_head).
func smallConfig(arch models.Family) Config {
	c := Config{Shape: models.Shape{Family: arch, VocabSize: 40, Hidden: 16, Intermediate: 24, Layers: 2, Heads: 4,
		KVHeads: 2, HeadDim: 8, RMSNormEps: 1e-5, RopeTheta: 10000, MaxPositionEmbeddings: 128}, BOSTokenID: -1}
	if arch == models.Llama3 {
		c.TieWordEmbeddings = true
		c.RopeScaling = &RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 16}
	}
	return c
}

// randomTensors draws base weights for c from seed.
func randomTensors(c Config, seed uint64) Tensors {
	ts := Tensors{}
	r := newRNG(seed)
	shapes := ExpectedShapes(c)
	var slab hugeSlab // as loading allocates them (loadFile)
	for _, name := range sortedKeys(shapes) {
		s := shapes[name]
		data := hugeSlabAlloc[float32](&slab, s[0]*shapeTail(s))
		if len(s) == 1 {
			for i := range data {
				data[i] = 1 + float32(0.4*(r.uniform32()-0.5))
			}
		} else {
			fill(data, r, math.Sqrt(3)/math.Sqrt(float64(s[1])))
		}
		ts[name] = Tensor{Shape: s, Data: data}
	}
	return ts
}

func smallModel(t testing.TB, arch models.Family) (*Model, Tensors) {
	t.Helper()
	c := smallConfig(arch)
	ts := randomTensors(c, 7)
	m, err := New("small-"+string(arch), c, ts)
	if err != nil {
		t.Fatal(err)
	}
	return m, ts
}

func mustTrainer(t testing.TB, m *Model, c LoRAConfig) *Trainer {
	t.Helper()
	tr, err := NewTrainer(m, c)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// randomizeB gives every lora_B random values (a fresh adapter's B is zero,
// which would make every lora_A gradient zero).
func randomizeB(t testing.TB, tr *Trainer, seed uint64, amp float64) {
	t.Helper()
	ts := tr.Adapter()
	r := newRNG(seed)
	for _, name := range sortedKeys(ts) {
		if strings.HasSuffix(name, "lora_B.weight") {
			fill(ts[name].Data, r, amp)
		}
	}
	if err := tr.LoadAdapter(ts); err != nil {
		t.Fatal(err)
	}
}

// testData returns two datums of different lengths with every input any
// loss takes: weights of both signs, sampling logprobs near the model's
// (so PPO ratios fall on both sides of the clip range) and advantages of
// both signs.
func testData(vocab int, seed uint64, lens ...int) []Datum {
	r := newRNG(seed)
	var data []Datum
	for _, n := range lens {
		d := Datum{ModelInput: make([]int, n), LossFnInputs: map[string][]float64{}}
		tg, w, q, a := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range n {
			d.ModelInput[i] = int(r.next() % uint64(vocab))
			tg[i] = float64(r.next() % uint64(vocab))
			w[i] = 2*r.float64() - 0.7
			q[i] = -math.Log(float64(vocab)) + 0.8*(r.float64()-0.5)
			a[i] = 2*r.float64() - 0.8
		}
		d.LossFnInputs[InputTargetTokens] = tg
		d.LossFnInputs[InputWeights] = w
		d.LossFnInputs[InputLogprobs] = q
		d.LossFnInputs[InputAdvantages] = a
		data = append(data, d)
	}
	return data
}

// forLoss keeps only the inputs loss takes.
func forLoss(data []Datum, loss string) []Datum {
	out := make([]Datum, len(data))
	for i, d := range data {
		in := map[string][]float64{InputTargetTokens: d.LossFnInputs[InputTargetTokens]}
		if loss == LossCrossEntropy {
			in[InputWeights] = d.LossFnInputs[InputWeights]
		} else {
			in[InputLogprobs] = d.LossFnInputs[InputLogprobs]
			in[InputAdvantages] = d.LossFnInputs[InputAdvantages]
		}
		out[i] = Datum{ModelInput: d.ModelInput, LossFnInputs: in}
	}
	return out
}

// refLoss is the loss of data in float64 from the reference forward pass
// with the adapter merged into the weights, written from the loss
// definitions independently of Loss.term.
func refLoss(c Config, base, adapter Tensors, scale float64, loss string, cfg map[string]float64, data []Datum) float64 {
	ref := &refModel{c: c, ts: base, lora: adapter, scale: scale}
	var total float64
	for _, d := range data {
		logits := ref.logits(d.ModelInput)
		for j := range len(d.ModelInput) * d.width() {
			p := j / d.width() // with (N, K) targets, value j is position p's
			lp := refLogSoftmax(logits[p], 1)[int(d.LossFnInputs[InputTargetTokens][j])]
			get := func(k string, def float64) float64 {
				if v, ok := d.LossFnInputs[k]; ok {
					return v[j]
				}
				return def
			}
			w, q, a := get(InputWeights, 1), get(InputLogprobs, 0), get(InputAdvantages, 0)
			ratio := math.Exp(lp - q)
			clamp := func(lo, hi float64) float64 { return math.Max(lo, math.Min(hi, ratio)) }
			switch loss {
			case LossCrossEntropy:
				total -= w * lp
			case LossImportanceSampling:
				total -= ratio * a
			case LossPPO:
				total -= math.Min(ratio*a, clamp(cfgOr(cfg, "clip_low_threshold", 0.8), cfgOr(cfg, "clip_high_threshold", 1.2))*a)
			case LossCISPO:
				// The clamped ratio is a constant for the gradient: use the
				// unperturbed one, passed in through q's companion below.
				total -= get("cispo_weight", 0) * a * lp
			case LossDRO:
				total -= lp*a - 0.5*cfg["beta"]*(lp-q)*(lp-q)
			}
		}
	}
	return total
}

func cfgOr(cfg map[string]float64, k string, def float64) float64 {
	if v, ok := cfg[k]; ok {
		return v
	}
	return def
}

// gradOf reads a trainer's accumulated gradient of one tensor.
func gradOf(tr *Trainer, name string) []float32 {
	for _, p := range tr.params {
		if p.name == name {
			return p.grad
		}
	}
	panic("no tensor " + name)
}

// checkFD compares the accumulated gradient of every adapter tensor (at a
// few elements each) with float64 central differences of refLoss.
func checkFD(t *testing.T, tr *Trainer, base Tensors, loss string, cfg map[string]float64, data []Datum) {
	t.Helper()
	c := tr.base.cfg
	adapter := tr.Adapter()
	r := newRNG(11)
	checked := 0
	for _, name := range sortedKeys(adapter) {
		x := adapter[name]
		g := gradOf(tr, name)
		// A shared expert factor's gradient sums over every expert: more samples.
		samples := 2
		if len(x.Shape) == 3 && x.Shape[0] == 1 {
			samples = 6
		}
		for range samples {
			i := int(r.next() % uint64(len(x.Data)))
			orig := x.Data[i]
			const h = 1e-3
			x.Data[i] = orig + h
			up := float64(x.Data[i])
			lPlus := refLoss(c, base, adapter, tr.scale, loss, cfg, data)
			x.Data[i] = orig - h
			down := float64(x.Data[i])
			lMinus := refLoss(c, base, adapter, tr.scale, loss, cfg, data)
			x.Data[i] = orig
			fd := (lPlus - lMinus) / (up - down)
			if diff := math.Abs(float64(g[i]) - fd); diff > 2e-3*math.Max(1, math.Abs(fd)) {
				t.Errorf("%s: d/d %s[%d] = %.6g, finite differences %.6g", loss, name, i, g[i], fd)
			}
			checked++
		}
	}
	if checked < 2*len(adapter) {
		t.Fatalf("checked only %d elements", checked)
	}
}

func TestGradientsMatchFiniteDifferences(t *testing.T) {
	for _, arch := range []models.Family{models.Llama3, models.Qwen3} {
		m, base := smallModel(t, arch)
		checkAllLossesFD(t, string(arch), m, base)
	}
}

// checkAllLossesFD checks every loss's value and gradients on model m
// (with base weights base) against the float64 reference.
func checkAllLossesFD(t *testing.T, name string, m *Model, base Tensors) {
	configs := map[string]map[string]float64{
		LossCrossEntropy: nil, LossImportanceSampling: nil, LossPPO: nil,
		LossCISPO: {"clip_low_threshold": 0.9, "clip_high_threshold": 1.1}, LossDRO: {"beta": 0.7},
	}
	for _, lossName := range LossNames() {
		t.Run(name+"/"+lossName, func(t *testing.T) {
			tr := mustTrainer(t, m, LoRAConfig{Rank: 3, Alpha: 6, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 5})
			randomizeB(t, tr, 3, 0.3)
			loss, err := NewLoss(lossName, configs[lossName])
			if err != nil {
				t.Fatal(err)
			}
			data := forLoss(testData(m.cfg.VocabSize, 9, 5, 7), lossName)
			// Accumulate over two calls.
			var sum float64
			for _, part := range [][]Datum{data[:1], data[1:]} {
				res, err := tr.ForwardBackward(context.Background(), loss, part)
				if err != nil {
					t.Fatal(err)
				}
				sum += res.LossSum
			}
			if lossName == LossCISPO {
				// Freeze the clamped ratio at the current parameters.
				fwd, _ := tr.Forward(context.Background(), loss, data)
				for i, d := range data {
					cw := make([]float64, len(d.ModelInput))
					for p := range cw {
						ratio := math.Exp(float64(fwd.Outputs[i].Logprobs[p]) - d.LossFnInputs[InputLogprobs][p])
						cw[p] = math.Max(0.9, math.Min(1.1, ratio))
					}
					d.LossFnInputs["cispo_weight"] = cw
				}
			}
			want := refLoss(m.cfg, base, tr.Adapter(), tr.scale, lossName, configs[lossName], data)
			if math.Abs(sum-want) > 1e-4*math.Max(1, math.Abs(want)) {
				t.Errorf("loss:sum %v, reference %v", sum, want)
			}
			checkFD(t, tr, base, lossName, configs[lossName], data)
		})
	}
}

// Each target alone: only its tensors exist, and the backward pass stops as
// early as it can (unembed: no layer at all; mlp: not through layer 0's
// attention).
func TestGradientsPerTarget(t *testing.T) {
	m, base := smallModel(t, models.Qwen3)
	checkPerTarget(t, m, base)
}

// checkPerTarget checks each target's gradients alone on m.
func checkPerTarget(t *testing.T, m *Model, base Tensors) {
	for _, c := range []LoRAConfig{{TrainAttn: true}, {TrainMLP: true}, {TrainUnembed: true}} {
		c.Rank, c.Alpha, c.Seed = 2, 4, 1
		tr := mustTrainer(t, m, c)
		randomizeB(t, tr, 4, 0.3)
		loss, _ := NewLoss(LossCrossEntropy, nil)
		data := forLoss(testData(m.cfg.VocabSize, 2, 6), LossCrossEntropy)
		if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
			t.Fatal(err)
		}
		checkFD(t, tr, base, LossCrossEntropy, nil, data)
	}
}

func gradBits(tr *Trainer) [][]float32 {
	var out [][]float32
	for _, p := range tr.params {
		out = append(out, slices.Clone(p.grad))
	}
	return out
}

func TestGradientsIndependentOfBatchSplit(t *testing.T) {
	// Under qemu the dense model: the MoE and GPT-OSS layers' kernels are
	// the dense ones, checked there by TestMoEMatchesReference and
	// TestGptOssMatchesReference.
	all := []string{models.TinyQwen3, models.TinyQwen3MoE, models.TinyGptOss}
	for _, name := range qemuFew(all, all[:1]) {
		t.Run(name, func(t *testing.T) { checkBatchSplit(t, name) })
	}
}

func checkBatchSplit(t *testing.T, name string) {
	m := mustLoad(t, name)
	cfg := LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 2}
	loss, _ := NewLoss(LossCrossEntropy, nil)
	data := forLoss(testData(m.cfg.VocabSize, 3, 9, 20, 4), LossCrossEntropy)
	one := mustTrainer(t, m, cfg)
	randomizeB(t, one, 1, 0.05)
	if _, err := one.ForwardBackward(context.Background(), loss, data); err != nil {
		t.Fatal(err)
	}
	// Split into three calls, and over a different number of goroutines.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	split := mustTrainer(t, m, cfg)
	randomizeB(t, split, 1, 0.05)
	for _, d := range data {
		if _, err := split.ForwardBackward(context.Background(), loss, []Datum{d}); err != nil {
			t.Fatal(err)
		}
	}
	a, b := gradBits(one), gradBits(split)
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Fatalf("tensor %s: gradients differ between one call and three", one.params[i].name)
		}
	}
}

// The training forward computes exactly the prompt logprobs a sampler with
// the same adapter reports (also past the sampler's 128-position prefill
// chunk). For latent attention within float32 rounding only: sampling
// attends in the absorbed form over its latent cache, training in the
// expanded form (docs/engine-attention.md, "DeepSeek's latent attention").
func TestForwardMatchesSampler(t *testing.T) {
	for _, name := range testModels(t) {
		m := mustLoad(t, name)
		tr := mustTrainer(t, m, LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 3})
		randomizeB(t, tr, 2, 0.02)
		seq := make([]int, 150)
		r := newRNG(4)
		for i := range seq {
			seq[i] = 32 + int(r.next()%95)
		}
		tg := make([]float64, len(seq)-1)
		for i := range tg {
			tg[i] = float64(seq[i+1])
		}
		loss, _ := NewLoss(LossCrossEntropy, nil)
		res, err := tr.Forward(context.Background(), loss, []Datum{{ModelInput: seq[:len(seq)-1], LossFnInputs: map[string][]float64{InputTargetTokens: tg}}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := tr.Sampler()
		if err != nil {
			t.Fatal(err)
		}
		sr := sample(t, s, SampleRequest{Prompt: seq, PromptLogprobs: true})
		for i, lp := range res.Outputs[0].Logprobs {
			want := *sr.PromptLogprobs[i+1]
			if d := math.Abs(float64(lp - want)); m.cfg.MLA != nil && d <= 2e-5*max(1, math.Abs(float64(want))) {
				continue
			}
			if math.Float32bits(lp) != math.Float32bits(want) {
				t.Fatalf("%s: position %d: training forward %v, sampler %v", name, i, lp, want)
			}
			if el := res.Outputs[0].ElementwiseLoss[i]; el != -lp {
				t.Fatalf("elementwise_loss %v for logprob %v", el, lp)
			}
		}
	}
}

func TestDataValidation(t *testing.T) {
	m := mustLoad(t, models.TinyLlama)
	tr := mustTrainer(t, m, LoRAConfig{Rank: 2, TrainMLP: true})
	ce, _ := NewLoss(LossCrossEntropy, nil)
	is, _ := NewLoss(LossImportanceSampling, nil)
	good := func(l Loss) Datum {
		d := Datum{ModelInput: []int{1, 2, 3}, LossFnInputs: map[string][]float64{InputTargetTokens: {2, 3, 4}}}
		if l.Name != LossCrossEntropy {
			d.LossFnInputs[InputLogprobs] = []float64{-1, -1, -1}
			d.LossFnInputs[InputAdvantages] = []float64{1, 1, 1}
		}
		return d
	}
	cases := []struct {
		loss  Loss
		edit  func(*Datum)
		field string
		want  string
	}{
		{ce, func(d *Datum) { d.LossFnInputs[InputWeights] = []float64{1, 1} }, "loss_fn_inputs.weights", "has 2 values but model_input has 3"},
		{ce, func(d *Datum) { d.LossFnInputs["advantages"] = []float64{1, 1, 1} }, "loss_fn_inputs.advantages", "not an input of cross_entropy"},
		{ce, func(d *Datum) { delete(d.LossFnInputs, InputTargetTokens) }, "loss_fn_inputs.target_tokens", "missing"},
		{ce, func(d *Datum) { d.LossFnInputs[InputTargetTokens][1] = 260 }, "loss_fn_inputs.target_tokens", "outside the vocabulary"},
		{ce, func(d *Datum) { d.ModelInput[0] = -1 }, "model_input", "outside the vocabulary"},
		{ce, func(d *Datum) { d.ModelInput = make([]int, 2049) }, "model_input", "exceed the model's context of 2048"},
		{is, func(d *Datum) { delete(d.LossFnInputs, InputAdvantages) }, "loss_fn_inputs.advantages", "missing"},
	}
	for _, tc := range cases {
		data := []Datum{good(tc.loss), good(tc.loss)}
		tc.edit(&data[1])
		_, err := tr.ForwardBackward(context.Background(), tc.loss, data)
		var ie *InputError
		if !errors.As(err, &ie) || ie.Datum != 1 || ie.Field != tc.field || !strings.Contains(ie.Msg, tc.want) {
			t.Errorf("got %v, want datum 1 %s: ...%s", err, tc.field, tc.want)
		}
	}
	for _, g := range gradBits(tr) {
		if slices.ContainsFunc(g, func(v float32) bool { return v != 0 }) {
			t.Fatal("a refused request changed the gradients")
		}
	}
	if _, err := NewLoss(LossPPO, map[string]float64{"clip_low": 0.5}); err == nil || !strings.Contains(err.Error(), `"clip_low"`) {
		t.Errorf("unknown config key: %v", err)
	}
	if _, err := NewLoss(LossCrossEntropy, map[string]float64{"beta": 1}); err == nil || !strings.Contains(err.Error(), `"beta"`) {
		t.Errorf("config key for cross_entropy: %v", err)
	}
	if _, err := NewLoss("mse", nil); err == nil || !strings.Contains(err.Error(), "mse") {
		t.Errorf("unknown loss: %v", err)
	}
	if _, err := NewLoss(LossDRO, nil); err == nil || !strings.Contains(err.Error(), "beta") {
		t.Errorf("dro without beta: %v", err)
	}
}

// The tiny model memorises a completion: the supervised loss falls more
// than tenfold and greedy sampling then reproduces it.
func TestLearnsCompletion(t *testing.T) {
	m := mustLoad(t, models.TinyLlama)
	tr := mustTrainer(t, m, LoRAConfig{Rank: 8, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 1})
	tok := m.Tokenizer()
	prompt := tok.Encode("Q: colour?\nA:", true)
	completion := append(tok.Encode(" teal", false), models.TinyEOS)
	full := append(slices.Clone(prompt), completion...)
	tg, w := make([]float64, len(full)-1), make([]float64, len(full)-1)
	for i := range tg {
		tg[i] = float64(full[i+1])
		if i+1 >= len(prompt) {
			w[i] = 1
		}
	}
	data := []Datum{{ModelInput: full[:len(full)-1], LossFnInputs: map[string][]float64{InputTargetTokens: tg, InputWeights: w}}}
	loss, _ := NewLoss(LossCrossEntropy, nil)
	adam := DefaultAdamParams()
	adam.LearningRate = 1e-2
	var first, last float64
	for step := range 40 {
		res, err := tr.ForwardBackward(context.Background(), loss, data)
		if err != nil {
			t.Fatal(err)
		}
		if step == 0 {
			first = res.LossSum
		}
		last = res.LossSum
		if _, err := tr.OptimStep(adam); err != nil {
			t.Fatal(err)
		}
	}
	if last*10 > first {
		t.Fatalf("loss fell from %v to %v only", first, last)
	}
	s, err := tr.Sampler()
	if err != nil {
		t.Fatal(err)
	}
	got := sample(t, s, SampleRequest{Prompt: prompt, MaxTokens: 10, StopTokens: []int{models.TinyEOS}})
	if !slices.Equal(got.Sequences[0].Tokens, completion) {
		t.Fatalf("greedy sample %q, want %q (loss %v -> %v)", tok.Decode(got.Sequences[0].Tokens, false), tok.Decode(completion, false), first, last)
	}
}

// Importance sampling with a positive advantage on one sample's tokens
// raises their probability.
func TestImportanceSamplingRaisesAdvantaged(t *testing.T) {
	m := mustLoad(t, models.TinyQwen3)
	tr := mustTrainer(t, m, LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, Seed: 2})
	s, _ := tr.Sampler()
	seed := int64(5)
	resp := sample(t, s, SampleRequest{Prompt: []int{models.TinyBOS, 'a'}, MaxTokens: 8, Temperature: 1, Seed: &seed, NumSamples: 2})
	var data []Datum
	for i, seq := range resp.Sequences {
		full := append([]int{models.TinyBOS, 'a'}, seq.Tokens...)
		n := len(full) - 1
		tg, q, a := make([]float64, n), make([]float64, n), make([]float64, n)
		for p := range n {
			tg[p] = float64(full[p+1])
			if p >= 1 {
				q[p] = float64(seq.Logprobs[p-1])
				a[p] = []float64{1, 0}[i]
			}
		}
		data = append(data, Datum{ModelInput: full[:n], LossFnInputs: map[string][]float64{InputTargetTokens: tg, InputLogprobs: q, InputAdvantages: a}})
	}
	loss, _ := NewLoss(LossImportanceSampling, nil)
	ce, _ := NewLoss(LossCrossEntropy, nil)
	logp := func(d Datum) float64 {
		res, err := tr.Forward(context.Background(), ce, []Datum{{ModelInput: d.ModelInput, LossFnInputs: map[string][]float64{InputTargetTokens: d.LossFnInputs[InputTargetTokens]}}})
		if err != nil {
			t.Fatal(err)
		}
		var s float64
		for _, v := range res.Outputs[0].Logprobs[1:] {
			s += float64(v)
		}
		return s
	}
	before := []float64{logp(data[0]), logp(data[1])}
	adam := DefaultAdamParams()
	adam.LearningRate = 1e-4
	for range 3 {
		if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.OptimStep(adam); err != nil {
			t.Fatal(err)
		}
	}
	after := []float64{logp(data[0]), logp(data[1])}
	if after[0] <= before[0]+0.1 {
		t.Fatalf("log-probability of the advantaged sample %v -> %v (the other: %v -> %v)", before[0], after[0], before[1], after[1])
	}
}

func TestSamplerUsesTrainedWeights(t *testing.T) {
	m := mustLoad(t, models.TinyLlama)
	tr := mustTrainer(t, m, LoRAConfig{Rank: 2, TrainUnembed: true})
	s0, _ := tr.Sampler()
	randomizeB(t, tr, 1, 0.5)
	s1, _ := tr.Sampler()
	r0 := sample(t, s0, SampleRequest{Prompt: []int{models.TinyBOS, 'x'}, PromptLogprobs: true})
	r1 := sample(t, s1, SampleRequest{Prompt: []int{models.TinyBOS, 'x'}, PromptLogprobs: true})
	if *r0.PromptLogprobs[1] == *r1.PromptLogprobs[1] {
		t.Fatal("sampler ignores the adapter's new values")
	}
}

// A call cancelled part-way leaves the accumulated gradient exactly as it
// was.
func TestCancelledCallLeavesGradients(t *testing.T) {
	m := mustLoad(t, models.TinyQwen3)
	cfg := LoRAConfig{Rank: 2, TrainAttn: true, TrainMLP: true, Seed: 4}
	loss, _ := NewLoss(LossCrossEntropy, nil)
	data := forLoss(testData(m.cfg.VocabSize, 5, 8, 6), LossCrossEntropy)
	a := mustTrainer(t, m, cfg)
	randomizeB(t, a, 2, 0.1)
	if _, err := a.ForwardBackward(context.Background(), loss, data[:1]); err != nil {
		t.Fatal(err)
	}
	before := gradBits(a)
	// Done at the 10th check: checks come before each of the 4 layers
	// forward and backward, so the first datum is in and the second runs.
	ctx := &countdownCtx{Context: context.Background(), left: 10}
	if _, err := a.ForwardBackward(ctx, loss, data); !errors.Is(err, context.Canceled) || ctx.left > 0 {
		t.Fatalf("cancelled call returned %v (%d checks left)", err, ctx.left)
	}
	after := gradBits(a)
	for i := range before {
		if !slices.Equal(before[i], after[i]) {
			t.Fatal("a cancelled call changed the gradients")
		}
	}
}

// countdownCtx reports itself cancelled from its left-th Err call on.
type countdownCtx struct {
	context.Context
	left int
}

func (c *countdownCtx) Err() error {
	if c.left--; c.left <= 0 {
		return context.Canceled
	}
	return nil
}

// TestArenaToFillIsWritten holds the callers of the arena's takeToFill
// and rowsToFill to their promise, to write every element before reading
// any: with the arena poisoned (every such take handed out full of NaN,
// poisonArena) each tiny model family computes the same loss and
// gradients, bit for bit, as unpoisoned, in a call of several datums
// (grouped, and reusing each other's memory) with and without the
// backward pass, keeping activations and recomputing them. A caller that
// leaves one element unwritten reads NaN and fails here.
func TestArenaToFillIsWritten(t *testing.T) {
	cfg := LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 2}
	loss, _ := NewLoss(LossCrossEntropy, nil)
	for _, name := range qemuFew(TinyModels(), testModels(t)) {
		m := mustLoad(t, name)
		data := forLoss(testData(m.cfg.VocabSize, 3, 9, 20, 4, 33), LossCrossEntropy)
		for _, keep := range []int64{DefaultKeepLimit, 0} {
			run := func() (*ForwardResult, *ForwardResult, [][]float32) {
				tr := mustTrainer(t, m, cfg)
				tr.SetKeepLimit(keep)
				randomizeB(t, tr, 1, 0.05)
				fwd, fb := forwardBoth(t, tr, loss, data)
				return fwd, fb, gradBits(tr)
			}
			fwd0, fb0, g0 := run()
			t.Run(fmt.Sprintf("%s/keep=%d", name, keep), func(t *testing.T) {
				poisonArena(t)
				fwd1, fb1, g1 := run()
				if !reflect.DeepEqual(fwd0, fwd1) || !reflect.DeepEqual(fb0, fb1) {
					t.Fatalf("outputs differ when takeToFill hands out NaN")
				}
				for i := range g0 {
					if !slices.Equal(g0[i], g1[i]) {
						t.Fatalf("gradients of tensor %d differ when takeToFill hands out NaN", i)
					}
				}
			})
		}
	}
}
