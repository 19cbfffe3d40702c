package export

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// deepseekBase writes tiny-deepseek as a model directory in dtype dt.
func deepseekBase(t *testing.T, dt safetensors.DType) string {
	t.Helper()
	c, ts, err := engine.TinyTensors(models.TinyDeepSeek)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg, _ := c.HFConfigJSON()
	writeFile(t, dir, "config.json", cfg)
	writeFile(t, dir, "tokenizer.json", tokenizer.TinyJSON())
	writeShards(t, dir, ts, 2, dt)
	return dir
}

// deepseekTrained trains an adapter on tiny-deepseek on every matrix the
// service adapts (latent attention, the dense first layer, routed and
// shared experts, the unembedding): AdamW steps of cross-entropy on one
// sentence, saved as the local server saves it.
func deepseekTrained(t *testing.T) string {
	t.Helper()
	m, err := engine.Load(models.TinyDeepSeek)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := engine.NewTrainer(m, engine.LoRAConfig{Rank: 4, Alpha: 8, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	toks := m.Tokenizer().Encode("latent attention, shared experts", true)
	targets := make([]float64, len(toks)-1)
	for i, tok := range toks[1:] {
		targets[i] = float64(tok)
	}
	data := []engine.Datum{{ModelInput: toks[:len(toks)-1], LossFnInputs: map[string][]float64{engine.InputTargetTokens: targets}}}
	loss, _ := engine.NewLoss(engine.LossCrossEntropy, nil)
	for range 4 {
		if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.OptimStep(engine.AdamParams{LearningRate: 0.02, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8}); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "adapter")
	if err := tr.WriteStateDir(dir, models.TinyDeepSeek, false); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The adapter deepseekTrained writes, merged into
// a float32 and a bfloat16 base and run by the engine as a plain model,
// gives the engine's on-the-fly LoRA logprobs within float32 rounding
// (bfloat16: the merged weights are rounded once more); its PEFT export
// computes the same logprobs and merges into the same weights.
func TestLatentMergedMatchesEngine(t *testing.T) {
	ad := deepseekTrained(t)
	for _, tc := range []struct {
		dt  safetensors.DType
		tol float64
	}{{safetensors.F32, 1e-4}, {safetensors.BF16, 0.25}} {
		t.Run(string(tc.dt), func(t *testing.T) {
			base := deepseekBase(t, tc.dt)
			out := filepath.Join(t.TempDir(), "merged")
			res, err := Export(context.Background(), Options{Adapter: ad, Base: base, Out: out})
			if err != nil {
				t.Fatal(err)
			}
			// Per layer 3 attention modules; layer 0's dense MLP; layers 1
			// and 2: 12 experts × 3 and 3 shared; and lm_head.
			if want := 3*3 + 3 + 2*(12*3+3) + 1; res.Modules != want {
				t.Errorf("%d modules merged, want %d", res.Modules, want)
			}
			want, got := referenceLogprobs(t, base, ad), servedLogprobs(t, out)
			t.Logf("%s: merged vs adapter %g, base vs adapter %g", tc.dt, maxDiff(want, got), maxDiff(want, servedLogprobs(t, base)))
			if d := maxDiff(want, got); d > tc.tol {
				t.Errorf("merged logprobs differ from base+adapter by %g", d)
			}
			if d := maxDiff(want, servedLogprobs(t, base)); d < 1e-2 {
				t.Errorf("the adapter changes logprobs by only %g: the test proves nothing", d)
			}
		})
	}
	base := deepseekBase(t, safetensors.F32)
	pe := filepath.Join(t.TempDir(), "peft")
	res, err := Export(context.Background(), Options{Adapter: ad, Format: PEFT, Out: pe})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Warnings, LatentServeWarning) {
		t.Errorf("PEFT export warnings %q, want the DeepSeek serving line", res.Warnings)
	}
	checkPEFTSame(t, base, ad, pe)
}

// checkPEFTSame: the PEFT export pe of adapter ad computes the same
// logprobs on base and merges into it as the same bytes.
func checkPEFTSame(t *testing.T, base, ad, pe string) {
	t.Helper()
	if d := maxDiff(referenceLogprobs(t, base, ad), referenceLogprobs(t, base, pe)); d != 0 {
		t.Errorf("the PEFT export computes something else (max diff %g)", d)
	}
	var merged [2]string
	for i, src := range []string{ad, pe} {
		merged[i] = filepath.Join(t.TempDir(), "merged")
		if _, err := Export(context.Background(), Options{Adapter: src, Base: base, Out: merged[i]}); err != nil {
			t.Fatal(err)
		}
	}
	sameFiles(t, merged[0], merged[1], "merging the PEFT export vs merging the original")
}
