package server

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/export"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// writeExternalAdapter writes a PEFT adapter for the tiny Llama with
// random A and B on the given modules of every layer (plus extra, a
// module path written as given), the way another trainer would.
func writeExternalAdapter(t *testing.T, rank, alpha int, modules []string, unembed string) string {
	t.Helper()
	c, _ := engine.TinyConfig(models.TinyLlama)
	shapes := engine.ExpectedShapes(c)
	r := rand.New(rand.NewPCG(11, 12))
	var out []safetensors.Tensor
	add := func(path string, rows, cols int) {
		for _, h := range []struct {
			half       string
			rows, cols int
			sd         float64
		}{{"lora_A", rank, cols, 0.3}, {"lora_B", rows, rank, 0.05}} {
			v := make([]float32, h.rows*h.cols)
			for i := range v {
				v[i] = float32(r.NormFloat64() * h.sd)
			}
			b, _ := safetensors.EncodeFloat32(safetensors.F32, v)
			out = append(out, safetensors.Tensor{Name: "base_model.model." + path + "." + h.half + ".weight", DType: safetensors.F32,
				Shape: []int64{int64(h.rows), int64(h.cols)}, Data: b})
		}
	}
	for i := range c.Layers {
		for _, m := range modules {
			sh := shapes[fmt.Sprintf("model.layers.%d.%s.weight", i, m)]
			add(fmt.Sprintf("model.layers.%d.%s", i, m), sh[0], sh[1])
		}
	}
	if unembed != "" {
		add(unembed, c.VocabSize, c.Hidden)
	}
	dir := t.TempDir()
	cfg, _ := json.Marshal(peft.AdapterConfig{R: rank, LoraAlpha: float64(alpha), PeftType: "LORA", BaseModelNameOrPath: models.TinyLlama})
	os.WriteFile(filepath.Join(dir, peft.ConfigFile), cfg, 0o644)
	f, _ := os.Create(filepath.Join(dir, peft.WeightsFile))
	defer f.Close()
	if err := safetensors.Write(f, out, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

func adapterLogprobs(t *testing.T, dir string, prompt []int) []float64 {
	t.Helper()
	return modelAdapterLogprobs(t, models.TinyLlama, dir, prompt)
}

// modelAdapterLogprobs is a tiny model's prompt logprobs with the adapter in dir.
func modelAdapterLogprobs(t *testing.T, model, dir string, prompt []int) []float64 {
	t.Helper()
	base, err := engine.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	m, err := base.WithAdapter(dir)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Sample(context.Background(), engine.SampleRequest{Prompt: prompt, MaxTokens: 1, Temperature: 1, PromptLogprobs: true})
	if err != nil {
		t.Fatal(err)
	}
	var lp []float64
	for _, p := range resp.PromptLogprobs[1:] {
		lp = append(lp, float64(*p))
	}
	return lp
}

func maxAbsDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// TestImportAdapterRoundTrip: a service-named adapter exported as PEFT and
// imported back gives a run whose weights checkpoint computes the same
// logprobs (B rescaled from alpha 16 to the server's 32, missing attention
// modules filled as fresh ones), which a training client created from it
// reproduces over HTTP and keeps training.
func TestImportAdapterRoundTrip(t *testing.T) {
	orig := writeExternalAdapter(t, 3, 16, []string{"self_attn.q_proj", "self_attn.v_proj", "mlp.down_proj"}, "model.unembed_tokens")
	peftDir := filepath.Join(t.TempDir(), "peft")
	if _, err := export.Export(context.Background(), export.Options{Adapter: orig, Format: export.PEFT, Out: peftDir}); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	res, err := ImportAdapter(context.Background(), data, peftDir, models.TinyLlama, "", t0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rank != 3 || strings.Join(res.Targets, ",") != "attn,mlp,unembed" || !strings.HasSuffix(res.Path, "/weights/imported") {
		t.Errorf("import = %+v", res)
	}
	prompt := []int{models.TinyBOS, 'a', 'b', 'c', ' ', 'x', 'y', 'z', '\n', 'h', 'i'}
	want := adapterLogprobs(t, peftDir, prompt)
	wdir := checkpointPath(data, res.RunID, "weights", "imported")
	if d := maxAbsDiff(want, adapterLogprobs(t, wdir, prompt)); d > 1e-4 {
		t.Errorf("imported weights differ from the adapter by %g", d)
	}
	sdir := checkpointPath(data, res.RunID, "sampler_weights", "imported")
	if d := maxAbsDiff(want, adapterLogprobs(t, sdir, prompt)); d > 5e-2 {
		t.Errorf("imported sampler weights (bf16) differ from the adapter by %g", d)
	}

	pool := &engine.Pool{}
	e := newEnvIn(t, data, "", Options{Sampler: EngineSampler(pool), Engine: pool, FutureDelay: 1})
	sess := e.session(LocalUserKey)
	tc, err := sess.CreateTrainingClientFromState(context.Background(), res.Path, tinkerapi.StateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := sft(string(bytesOf(prompt[1:6])), string(bytesOf(prompt[6:])))
	d.LossFnInputs["weights"] = tinkerapi.Float32s(ones(len(prompt) - 1))
	out, err := tc.Forward(context.Background(), tinkerapi.ForwardBackwardInput{Data: []tinkerapi.Datum{d}, LossFn: "cross_entropy"})
	if err != nil {
		t.Fatal(err)
	}
	got := out.LossFnOutputs[0]["logprobs"].Float32
	for i, g := range got {
		if math.Abs(float64(g)-want[i]) > 1e-4 {
			t.Fatalf("training client's logprob %d = %g, the adapter's %g", i, g, want[i])
		}
	}
	te := &trainEnv{env: e, sess: sess}
	te.step(tc, []tinkerapi.Datum{d}, 1e-2)
}

func ones(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// TestImportAdapterRefuses: unknown modules, wrong shapes, unknown base
// models and bad names are one-line errors that record nothing.
func TestImportAdapterRefuses(t *testing.T) {
	data := t.TempDir()
	good := writeExternalAdapter(t, 2, 32, []string{"self_attn.q_proj"}, "")
	deep := writeExternalAdapter(t, 2, 32, []string{"self_attn.q_proj"}, "model.layers.99.self_attn.q_proj")
	c, _ := engine.TinyConfig(models.TinyLlama)
	wide := writeExternalAdapter(t, 2, 32, nil, "")
	os.Remove(filepath.Join(wide, peft.WeightsFile))
	f, _ := os.Create(filepath.Join(wide, peft.WeightsFile))
	safetensors.Write(f, []safetensors.Tensor{
		{Name: "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", DType: safetensors.F32, Shape: []int64{2, int64(c.Hidden + 1)}, Data: make([]byte, 8*(c.Hidden+1))},
		{Name: "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", DType: safetensors.F32, Shape: []int64{int64(c.Hidden), 2}, Data: make([]byte, 8*c.Hidden)},
	}, nil)
	f.Close()
	// An Inf in the weights (sampling then failed, blaming the optimizer).
	inf := writeExternalAdapter(t, 2, 32, []string{"self_attn.q_proj"}, "")
	ws, _ := safetensors.ReadFile(filepath.Join(inf, peft.WeightsFile))
	binary.LittleEndian.PutUint32(ws.Tensors[1].Data, 0x7f800000)
	f, _ = os.Create(filepath.Join(inf, peft.WeightsFile))
	safetensors.Write(f, ws.Tensors, nil)
	f.Close()
	for _, tc := range []struct{ dir, base, name, want string }{
		{inf, models.TinyLlama, "", "NaN or infinite value"},
		{deep, models.TinyLlama, "", "model.layers.99.self_attn.q_proj does not exist in tinker-local/tiny-llama"},
		{wide, models.TinyLlama, "", "lora_A has shape [2 65]"},
		{good, "me/nothing", "", `unknown base model "me/nothing"`},
		{good, "deepseek-ai/DeepSeek-V3.1", "", "model.layers.0.self_attn.q_proj does not exist in deepseek-ai/DeepSeek-V3.1"}, // it has q_a_proj
		{good, models.TinyLlama, "a/b", "name"},
	} {
		_, err := ImportAdapter(context.Background(), data, tc.dir, tc.base, tc.name, t0)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("import %s onto %s: %v, want one line with %q", filepath.Base(tc.dir), tc.base, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(data); len(entries) != 0 {
		t.Errorf("a refused import left %v", entries)
	}
}
