package export

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// paramWrapperDelta is PEFT's ParamWrapper.get_delta_weight for a 3-D
// parameter, transcribed from peft/tuners/lora/layer.py: A [E·r, in] viewed
// as [E, r, in], B [out, E·r] viewed as [out, r, E], and expert e's update
// [out][in] = scaling · Σ_k B[o, k, e] · A[e, k, i], in float64.
func paramWrapperDelta(a, b *safetensors.Tensor, experts int, scaling float64) ([][][]float64, error) {
	av, err := a.Float32()
	if err != nil {
		return nil, err
	}
	bv, err := b.Float32()
	if err != nil {
		return nil, err
	}
	in, out, rE := int(a.Shape[1]), int(b.Shape[0]), int(b.Shape[1])
	r := rE / experts
	if int(a.Shape[0]) != rE {
		return nil, fmt.Errorf("lora_A %v and lora_B %v disagree on r·E", a.Shape, b.Shape)
	}
	d := make([][][]float64, experts)
	for e := range experts {
		d[e] = make([][]float64, out)
		for o := range out {
			d[e][o] = make([]float64, in)
			for i := range in {
				var s float64
				for k := range r {
					s += float64(bv[o*rE+k*experts+e]) * float64(av[(e*r+k)*in+i])
				}
				d[e][o][i] = scaling * s
			}
		}
	}
	return d, nil
}

// expertDelta is scale·B·A of one per-expert module of the original adapter.
func expertDelta(t *testing.T, a *Adapter, path string) [][]float64 {
	t.Helper()
	for _, m := range a.Modules {
		if m.Path != path {
			continue
		}
		av, _ := m.A.Float32()
		bv, _ := m.B.Float32()
		r, in, out := int(m.A.Shape[0]), int(m.A.Shape[1]), int(m.B.Shape[0])
		d := make([][]float64, out)
		for o := range out {
			d[o] = make([]float64, in)
			for i := range in {
				for k := range r {
					d[o][i] += float64(bv[o*r+k]) * float64(av[k*in+i])
				}
				d[o][i] *= float64(a.Scale)
			}
		}
		return d
	}
	t.Fatalf("the adapter has no module %s", path)
	return nil
}

// A PEFT export onto fused experts (GPT-OSS always, Qwen3-MoE with a
// transformers 5.x base) names them with target_parameters; PEFT's own
// delta formula on the written factors gives every expert's gate, up and
// down update of the original adapter.
func TestPEFTFusedExperts(t *testing.T) {
	for _, tc := range []struct {
		name        string
		adapter     func(*testing.T) string
		base        string
		interleaved bool
		warning     string
	}{
		{"gpt-oss", gptOssAdapter, "", true, "GPT-OSS experts are written fused (target_parameters), the layout vLLM's GptOssForCausalLM loads: start vLLM with --max-lora-rank 6 or more"},
		{"qwen3-moe-5.x", moeAdapter, "fused", false, MoEFusedWarning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ad := tc.adapter(t)
			o := Options{Adapter: ad, Format: PEFT, Out: filepath.Join(t.TempDir(), "peft")}
			if tc.base != "" {
				o.Base = moeBase(t, true)
			}
			res, err := Export(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			orig, err := ReadAdapter(ad)
			if err != nil {
				t.Fatal(err)
			}
			defer orig.Close()
			if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.HasPrefix(w, tc.warning) }) {
				t.Errorf("warnings %q, want %q", res.Warnings, tc.warning)
			}
			if res.Modules != len(orig.Modules) {
				t.Errorf("%d matrices reported, the adapter has %d", res.Modules, len(orig.Modules))
			}
			checkFusedPEFT(t, o.Out, orig, tc.interleaved)
		})
	}
}

func checkFusedPEFT(t *testing.T, dir string, orig *Adapter, interleaved bool) {
	raw, err := os.ReadFile(filepath.Join(dir, peft.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var cfg peft.AdapterConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	r := cfg.R
	if !slices.Equal(cfg.TargetParameters, []string{"mlp.experts.gate_up_proj", "mlp.experts.down_proj"}) ||
		cfg.RankPattern["experts.gate_up_proj"] != 2*r || slices.Contains(cfg.TargetModules, "gate_proj") {
		t.Fatalf("adapter_config.json: target_parameters %v, rank_pattern %v, target_modules %v", cfg.TargetParameters, cfg.RankPattern, cfg.TargetModules)
	}
	f, err := safetensors.ReadFile(filepath.Join(dir, peft.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	const experts, layer = 8, 1
	p := fmt.Sprintf("base_model.model.model.layers.%d.mlp.experts.", layer)
	get := func(name string) *safetensors.Tensor {
		x, ok := f.Tensor(p + name)
		if !ok {
			t.Fatalf("no tensor %s%s in %v", p, name, f.Names())
		}
		return x
	}
	pre := fmt.Sprintf("model.layers.%d.mlp.experts.", layer)
	gateUp, err := paramWrapperDelta(get("base_layer.lora_A.weight"), get("base_layer.lora_B.weight"), experts,
		float64(cfg.AlphaPattern["experts.gate_up_proj"])/float64(2*r))
	if err != nil {
		t.Fatal(err)
	}
	down, err := paramWrapperDelta(get("lora_A.weight"), get("lora_B.weight"), experts, cfg.LoraAlpha/float64(r))
	if err != nil {
		t.Fatal(err)
	}
	var worst, largest float64
	for e := range experts {
		g, u := expertDelta(t, orig, fmt.Sprint(pre, e, ".gate_proj")), expertDelta(t, orig, fmt.Sprint(pre, e, ".up_proj"))
		inter := len(g)
		for o, row := range gateUp[e] {
			want := g[o%inter]
			switch {
			case interleaved && o%2 == 0:
				want = g[o/2]
			case interleaved:
				want = u[o/2]
			case o >= inter:
				want = u[o-inter]
			}
			worst, largest = maxRowDiff(worst, largest, row, want)
		}
		d := expertDelta(t, orig, fmt.Sprint(pre, e, ".down_proj"))
		for o, row := range down[e] {
			worst, largest = maxRowDiff(worst, largest, row, d[o])
		}
	}
	t.Logf("PEFT's delta vs the adapter's: max |Δ| %g (largest update %g)", worst, largest)
	if worst > 1e-6*largest || largest < 1e-3 {
		t.Errorf("PEFT's delta of the export differs from the adapter's by %g (largest update %g)", worst, largest)
	}
}

func maxRowDiff(worst, largest float64, got, want []float64) (float64, float64) {
	for i := range got {
		worst, largest = math.Max(worst, math.Abs(got[i]-want[i])), math.Max(largest, math.Abs(want[i]))
	}
	return worst, largest
}

// A target_parameters export reads back as the per-expert modules it came
// from: merging it gives the bytes merging the original gives, into the
// same fused base; a gate_up_proj whose B mixes gate and up, or a rank the
// export does not write, is refused in one line.
func TestPEFTFusedReadsBack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		adapter func(*testing.T) string
		base    func(*testing.T) string
	}{
		{"gpt-oss", gptOssAdapter, gptOssBase},
		{"qwen3-moe-5.x", moeAdapter, func(t *testing.T) string { return moeBase(t, true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ad, base := tc.adapter(t), tc.base(t)
			out := exportTo(t, Options{Adapter: ad, Format: PEFT, Base: base})
			back, err := ReadAdapter(out)
			if err != nil {
				t.Fatal(err)
			}
			defer back.Close()
			orig, err := ReadAdapter(ad)
			if err != nil {
				t.Fatal(err)
			}
			defer orig.Close()
			if len(back.Modules) != len(orig.Modules) {
				t.Fatalf("%d modules read back, the adapter has %d", len(back.Modules), len(orig.Modules))
			}
			sameFiles(t, exportTo(t, Options{Adapter: out, Base: base}), exportTo(t, Options{Adapter: ad, Base: base}),
				"merging the target_parameters export vs merging the original")
			mixed := filepath.Join(t.TempDir(), "mixed")
			copyDir(t, out, mixed)
			rewriteTensor(t, mixed, "base_model.model.model.layers.0.mlp.experts.base_layer.lora_B.weight", func(x []float32, cols int) {
				x[cols-1] = 0.5 // row 0 is a gate row; the last column is up's
			})
			if _, err := ReadAdapter(mixed); err == nil || !strings.Contains(err.Error(), "mixes gate and up") {
				t.Errorf("a B mixing gate and up: %v", err)
			}
		})
	}
}

// copyDir copies the regular files of src into a new directory dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(src)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dst, e.Name(), b)
	}
}

// rewriteTensor changes one float32 tensor of dir's adapter weights in place.
func rewriteTensor(t *testing.T, dir, name string, edit func(x []float32, cols int)) {
	t.Helper()
	path := filepath.Join(dir, peft.WeightsFile)
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	found := false
	for _, x := range f.Tensors {
		if x.Name == name {
			vals, _ := x.Float32()
			edit(vals, int(x.Shape[1]))
			x.Data, _ = safetensors.EncodeFloat32(x.DType, vals)
			found = true
		}
		ts = append(ts, x)
	}
	if !found {
		t.Fatalf("no tensor %s", name)
	}
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := safetensors.Write(w, ts, nil); err != nil {
		t.Fatal(err)
	}
}

// target_parameters adapters other than the form tinker writes are refused
// in one line naming what is unsupported.
func TestParamConfigRefused(t *testing.T) {
	gu := []string{gateUpParam, downParam}
	for _, c := range []struct {
		cfg  peft.AdapterConfig
		want string
	}{
		{peft.AdapterConfig{R: 2, RankPattern: map[string]int{"q_proj": 4}}, "rank_pattern/alpha_pattern cannot be exported"},
		{peft.AdapterConfig{R: 2, TargetParameters: []string{"mlp.experts.w1"}}, "tinker reads only"},
		{peft.AdapterConfig{R: 2, TargetParameters: gu, RankPattern: map[string]int{"q_proj": 4}}, "rank_pattern q_proj"},
		{peft.AdapterConfig{R: 2, TargetParameters: gu, RankPattern: map[string]int{"experts.gate_up_proj": 6}}, "gate_up_proj has rank 6"},
		{peft.AdapterConfig{R: 2, TargetParameters: gu}, "gate_up_proj has rank 2"},
	} {
		_, err := checkParamConfig(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: err %v, want %q", c.cfg, err, c.want)
		}
	}
	if p, err := checkParamConfig(peft.AdapterConfig{R: 2, LoraAlpha: 8, TargetParameters: gu, BaseModelNameOrPath: "openai/gpt-oss-20b",
		RankPattern: map[string]int{"experts.gate_up_proj": 4}, AlphaPattern: map[string]int{"experts.gate_up_proj": 16}}); err != nil ||
		!p.interleaved || p.gateUpScale != 4 || p.downScale != 4 {
		t.Errorf("tinker's own form: %+v %v", p, err)
	}
}
