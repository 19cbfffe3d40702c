package engine

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// gptOssConfig is a GPT-OSS small enough for finite differences: a
// sliding layer (window 3) then a full one, YaRN over an original context
// of 16, 4 experts of width 32 (a multiple of MXFP4's blocks of 32).
func gptOssConfig() Config {
	no := false
	return Config{Shape: models.Shape{Family: models.GptOss, VocabSize: 40, Hidden: 32, Intermediate: 32, Layers: 2,
		Heads: 4, KVHeads: 2, HeadDim: 8, RMSNormEps: 1e-5, RopeTheta: 1000, MaxPositionEmbeddings: 128,
		Experts: 4, ExpertsPerToken: 2, MoEIntermediate: 32},
		RopeScaling:   &RopeScaling{Type: "yarn", Factor: 8, BetaFast: 32, BetaSlow: 1, OriginalMaxPositionEmbeddings: 16, Truncate: &no},
		SlidingWindow: 3, LayerTypes: []string{"sliding_attention", "full_attention"}, SwigluLimit: 7, BOSTokenID: -1}
}

// gptOssCheckpoint draws a small GPT-OSS and returns its tensors as the
// engine names them (the reference reads these) and as a released
// checkpoint stores them: experts fused, gate and up interleaved, the
// weights MXFP4 (random 4-bit codes and block exponents), or, with dense,
// float32 [experts, in, out].
func gptOssCheckpoint(c Config, seed uint64, dense bool) (Tensors, []safetensors.Tensor) {
	ts := randomTensors(c, seed)
	var file []safetensors.Tensor
	r := newRNG(seed + 1)
	for i := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		gu, gub := fp4Experts(c, r, p, 2*c.MoEIntermediate, c.Hidden, ts, dense)
		dn, dnb := fp4Experts(c, r, p, c.Hidden, c.MoEIntermediate, ts, dense)
		file = append(append(append(file, gu...), dn...), gub, dnb)
	}
	for _, n := range sortedKeys(ts) {
		if !strings.Contains(n, ".mlp.experts.") {
			file = append(file, f32Tensor(n, ts[n]))
		}
	}
	return ts, file
}

func f32Tensor(name string, x Tensor) safetensors.Tensor {
	out, _ := safetensors.FromFloat32(name, safetensors.F32, x.Shape, x.Data)
	return out
}

// fp4Experts draws one fused expert weight ([experts, rows, cols] output
// rows; gate_up when rows is twice the expert width) from 4-bit codes,
// sets the per-expert tensors it dequantises to in ts, and returns the
// checkpoint's weight (blocks and scales, or dense) and bias tensors.
func fp4Experts(c Config, r *rng, p string, rows, cols int, ts Tensors, dense bool) ([]safetensors.Tensor, safetensors.Tensor) {
	proj := map[bool]string{true: "gate_up_proj", false: "down_proj"}[rows == 2*c.MoEIntermediate]
	E, groups := c.Experts, cols/32
	blocks, scales := make([]byte, E*rows*groups*16), make([]byte, E*rows*groups)
	vals := make([]float32, E*rows*cols)
	lut := []float64{0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6}
	for i := range scales {
		scales[i] = byte(127 - 3 - r.next()%2) // values up to 6/8
		for j := range 16 {
			b := byte(r.next())
			blocks[16*i+j] = b
			f := math.Pow(2, float64(int(scales[i])-127))
			vals[32*i+2*j], vals[32*i+2*j+1] = float32(lut[b&15]*f), float32(lut[b>>4]*f)
		}
	}
	bias := make([]float32, E*rows)
	fill(bias, r, 0.3)
	pre := p + "mlp.experts."
	for e := range E {
		for o := range rows {
			row := vals[(e*rows+o)*cols : (e*rows+o+1)*cols]
			name, k := "down_proj", o
			if proj == "gate_up_proj" {
				name, k = map[bool]string{true: "gate_proj", false: "up_proj"}[o%2 == 0], o/2
			}
			w := ts[expertName(p, e, name)]
			copy(w.Data[k*cols:(k+1)*cols], row)
			ts[expertBias(p, e, name)].Data[k] = bias[e*rows+o]
		}
	}
	biasT := f32Tensor(pre+proj+"_bias", Tensor{Shape: []int{E, rows}, Data: bias})
	if dense {
		tr := make([]float32, len(vals)) // [E, in, out]
		for e := range E {
			for o := range rows {
				for i := range cols {
					tr[(e*cols+i)*rows+o] = vals[(e*rows+o)*cols+i]
				}
			}
		}
		return []safetensors.Tensor{f32Tensor(pre+proj, Tensor{Shape: []int{E, cols, rows}, Data: tr})}, biasT
	}
	return []safetensors.Tensor{
		{Name: pre + proj + "_blocks", DType: safetensors.U8, Shape: []int64{int64(E), int64(rows), int64(groups), 16}, Data: blocks},
		{Name: pre + proj + "_scales", DType: safetensors.U8, Shape: []int64{int64(E), int64(rows), int64(groups)}, Data: scales},
	}, biasT
}

// writeCheckpoint writes config c and the tensors as a model directory.
func writeCheckpoint(t *testing.T, c Config, tensors []safetensors.Tensor) string {
	t.Helper()
	dir := t.TempDir()
	cfg, err := c.HFConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := safetensors.WriteDir(dir, [][]safetensors.Tensor{tensors}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// gptOssModel loads a small GPT-OSS from an MXFP4 checkpoint directory.
func gptOssModel(t *testing.T) (*Model, Tensors) {
	t.Helper()
	c := gptOssConfig()
	ts, file := gptOssCheckpoint(c, 31, false)
	return loadExact(t, writeCheckpoint(t, c, file), c), ts
}

// The engine matches the float64 reference on a GPT-OSS read from an
// MXFP4 checkpoint (sinks, a sliding window shorter than the prompt,
// YaRN, biases, clamped experts), with and without an adapter; the same
// weights stored dense give the same bits.
func TestGptOssMatchesReference(t *testing.T) {
	m, ts := gptOssModel(t)
	c := m.Config()
	lts := randomLoRA(c, 3, 5, false)
	l, err := NewLoRA(c, lts, 3, 6, false)
	if err != nil {
		t.Fatal(err)
	}
	prompt := testData(c.VocabSize, 3, 9)[0].ModelInput
	for _, tc := range []struct {
		name string
		m    *Model
		ref  *refModel
	}{{"base", m, &refModel{c: c, ts: ts}}, {"lora", m.WithLoRA(l), &refModel{c: c, ts: ts, lora: lts, scale: 2}}} {
		t.Run(tc.name, func(t *testing.T) {
			checkSampleRef(t, tc.m, tc.ref, prompt)
		})
	}
	_, file := gptOssCheckpoint(c, 31, true)
	dense, err := LoadDir(writeCheckpoint(t, c, file))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := promptLogprobs(t, dense, prompt), promptLogprobs(t, m, prompt); !slices.Equal(a, b) {
		t.Errorf("dense checkpoint %v, MXFP4 %v", a[:3], b[:3])
	}
}

// Every loss's gradient against float64 central finite differences.
func TestGptOssGradientsMatchFiniteDifferences(t *testing.T) {
	nativeOnly(t)
	m, base := gptOssModel(t)
	if g := routingMargin(t, m, base); g < 0.02 {
		t.Fatalf("a router logit gap at the top-k boundary is only %.3g: a ±1e-3 step may change the routing (pick another seed)", g)
	}
	checkAllLossesFD(t, "gpt_oss", m, base)
}

// The clamped activation's gradient, on values on both sides of the
// limits, against central differences.
func TestGptOssActivationGradient(t *testing.T) {
	const limit = 1.5
	g := []float32{-3, -0.7, 0.2, 1.2, 1.7, 2.5}
	u := []float32{-2, -1.2, 0.3, 1.4, 1.6, -0.4}
	dh := []float32{0.3, -1, 0.5, 2, -0.7, 1.1}
	dg, du := slices.Clone(dh), make([]float32, len(g))
	gptOssActBackward(limit, dg, du, g, u)
	f := func(g, u float64) float64 {
		gc, uc := math.Min(g, limit), math.Max(-limit, math.Min(u, limit))
		return (uc + 1) * gc / (1 + math.Exp(-1.702*gc))
	}
	const h = 1e-4
	for j := range g {
		x, y := float64(g[j]), float64(u[j])
		wg := float64(dh[j]) * (f(x+h, y) - f(x-h, y)) / (2 * h)
		wu := float64(dh[j]) * (f(x, y+h) - f(x, y-h)) / (2 * h)
		if math.Abs(float64(dg[j])-wg) > 1e-4 || math.Abs(float64(du[j])-wu) > 1e-4 {
			t.Errorf("g=%v u=%v: gradients %v %v, finite differences %v %v", g[j], u[j], dg[j], du[j], wg, wu)
		}
	}
}

// Training on tiny-gpt-oss resumes bit for bit, and its gradients do not
// depend on how the data are split or on the thread count.
func TestGptOssTraining(t *testing.T) {
	checkResume(t, models.TinyGptOss)
	checkBatchSplit(t, models.TinyGptOss)
	m := mustLoad(t, models.TinyGptOss)
	tr := mustTrainer(t, m, LoRAConfig{Rank: 4, TrainMLP: true, Seed: 1})
	if got := tr.AdapterConfig(models.TinyGptOss).TargetModules; !slices.Equal(got, []string{"w1", "w2", "w3"}) {
		t.Errorf("target modules %v", got)
	}
	loss, _ := NewLoss(LossCrossEntropy, nil)
	if _, err := tr.ForwardBackward(context.Background(), loss, forLoss(testData(m.cfg.VocabSize, 2, 30), LossCrossEntropy)); err != nil {
		t.Fatal(err)
	}
}
