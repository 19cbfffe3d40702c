package export

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// readTensors reads every tensor of a model directory's shards.
func readTensors(t *testing.T, dir string) map[string]safetensors.Tensor {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	out := map[string]safetensors.Tensor{}
	for _, p := range files {
		for n, x := range readTensorsFile(t, p) {
			out[n] = x
		}
	}
	return out
}

// dequantised is a weight's values and, when quantised, the scale each
// value was stored with.
func dequantised(t *testing.T, ts map[string]safetensors.Tensor, name string, rows, cols int) (vals, scale []float64) {
	t.Helper()
	vals, scale = make([]float64, rows*cols), make([]float64, rows*cols)
	if x, ok := ts[name+"_scale_inv"]; ok {
		s, _ := (&x).Float32()
		nbc := ceilDiv(cols, fxBlock[1])
		for i, c := range ts[name].Data {
			scale[i] = float64(s[(i/cols/fxBlock[0])*nbc+(i%cols)/fxBlock[1]])
			vals[i] = testFP8(c) * scale[i]
		}
		return vals, scale
	}
	if p, ok := ts[name+"_packed"]; ok {
		st := ts[name+"_scale"]
		s, _ := st.Float32()
		for i := range vals {
			q := int(p.Data[i/2]>>(4*(i%2))) & 15
			if q >= 8 {
				q -= 16
			}
			scale[i] = float64(s[i/fxGroup])
			vals[i] = float64(q) * scale[i]
		}
		return vals, scale
	}
	x, ok := ts[name]
	if !ok {
		t.Fatalf("output has no %s", name)
	}
	f, err := x.Float32()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range f {
		vals[i] = float64(v)
	}
	return vals, nil
}

// checkMerged compares every weight of out with the float64 merge of the
// fixture: within bfloat16 rounding when dequantised, within half a
// quantisation step (of the scale written) when requantised, whose
// scales must be the block's (FP8) or group's (INT4) largest magnitude
// over 448 or 7.
func checkMerged(t *testing.T, fx *latentFixture, out string, requant bool) {
	t.Helper()
	ts := readTensors(t, out)
	for name, sh := range fx.shape {
		want := append([]float64(nil), fx.ref[name]...)
		for i, d := range fx.delta[name] {
			want[i] += d
		}
		got, scale := dequantised(t, ts, name, sh[0], sh[1])
		if requant != (scale != nil) && fx.kind[name] != "plain" {
			t.Fatalf("%s: quantised %v, want %v", name, scale != nil, requant)
		}
		for i := range want {
			tol := math.Abs(want[i])/256 + 1e-7
			if scale != nil && fx.kind[name] == "fp8" {
				tol = math.Abs(want[i])/16 + scale[i]/512 + 1e-7
			} else if scale != nil {
				tol = scale[i]/2 + 1e-6
			}
			if math.Abs(got[i]-want[i]) > tol {
				t.Fatalf("%s[%d]: got %g, want %g (±%g)", name, i, got[i], want[i], tol)
			}
		}
		if scale != nil && fx.delta[name] != nil {
			checkScales(t, name, fx.kind[name], want, scale, sh[1])
		}
	}
}

// checkScales: each requantised block's scale is its largest magnitude
// over the format's largest value.
func checkScales(t *testing.T, name, kind string, want, scale []float64, cols int) {
	t.Helper()
	amax := map[float64]float64{}
	key := func(i int) float64 {
		if kind == "fp8" {
			return float64((i/cols/fxBlock[0])*1000 + (i%cols)/fxBlock[1])
		}
		return float64(i / fxGroup)
	}
	for i, w := range want {
		amax[key(i)] = max(amax[key(i)], math.Abs(w))
	}
	for i := range want {
		top, rel := 448.0, 1e-5
		if kind == "int4" {
			top, rel = 7, 1.0/128
		}
		if e := amax[key(i)] / top; math.Abs(scale[i]-e) > rel*e+1e-12 {
			t.Fatalf("%s[%d]: scale %g, want %g", name, i, scale[i], e)
		}
	}
}

func TestLatentMergeDequantised(t *testing.T) {
	for _, kimi := range []bool{false, true} {
		fx := newLatentFixture(t, kimi)
		out := filepath.Join(t.TempDir(), "merged")
		if _, err := Export(context.Background(), Options{Adapter: fx.adapter, Base: fx.base, Out: out, DType: "bfloat16"}); err != nil {
			t.Fatal(err)
		}
		checkMerged(t, fx, out, false)
		cfg, _ := os.ReadFile(filepath.Join(out, "config.json"))
		if bytes.Contains(cfg, []byte("quantization_config")) {
			t.Errorf("kimi %v: dequantised config keeps quantization_config", kimi)
		}
		for name := range readTensors(t, out) {
			if strings.Contains(name, "weight_") {
				t.Errorf("kimi %v: dequantised output has %s", kimi, name)
			}
		}
	}
}

func TestLatentMergeRequantised(t *testing.T) {
	for _, kimi := range []bool{false, true} {
		fx := newLatentFixture(t, kimi)
		out := filepath.Join(t.TempDir(), "merged")
		if _, err := Export(context.Background(), Options{Adapter: fx.adapter, Base: fx.base, Out: out}); err != nil {
			t.Fatal(err)
		}
		checkMerged(t, fx, out, true)
		// Weights the adapter does not touch are the base's bytes.
		base, got := readTensors(t, fx.base), readTensors(t, out)
		for name, x := range base {
			w, _ := quantWeightOfTest(name)
			if fx.delta[w] == nil && !bytes.Equal(x.Data, got[name].Data) {
				t.Errorf("kimi %v: %s changed though not adapted", kimi, name)
			}
		}
		cfg, _ := os.ReadFile(filepath.Join(out, "config.json"))
		if !bytes.Contains(cfg, []byte("quantization_config")) {
			t.Errorf("kimi %v: requantised config lost quantization_config", kimi)
		}
	}
}

func quantWeightOfTest(name string) (string, bool) {
	for _, suf := range []string{"_scale_inv", "_scale", "_shape", "_packed"} {
		if w, ok := strings.CutSuffix(name, suf); ok {
			return w, true
		}
	}
	return name, false
}

// A PEFT export says in one line that vLLM/SGLang cannot serve it, names
// one module per expert (under language_model. for Kimi K2.6), and merged
// back into the base gives the very bytes the original adapter gives.
func TestLatentPEFTRoundTrip(t *testing.T) {
	for _, kimi := range []bool{false, true} {
		fx := newLatentFixture(t, kimi)
		dir := t.TempDir()
		pe := filepath.Join(dir, "peft")
		res, err := Export(context.Background(), Options{Adapter: fx.adapter, Base: fx.base, Out: pe, Format: PEFT})
		if err != nil {
			t.Fatal(err)
		}
		note := map[bool]string{false: LatentServeWarning, true: KimiK25ServeWarning}[kimi]
		if len(res.Warnings) != 2 || res.Warnings[0] != UnembedWarning || res.Warnings[1] != note || strings.Contains(note, "\n") {
			t.Errorf("warnings %q", res.Warnings)
		}
		key := "base_model.model." + fx.prefix + "model.layers.1.mlp.experts.2.down_proj.lora_B.weight"
		if _, ok := readTensorsFile(t, filepath.Join(pe, "adapter_model.safetensors"))[key]; !ok {
			t.Errorf("kimi %v: PEFT export has no %s", kimi, key)
		}
		for _, dt := range []string{"", "bfloat16"} {
			a, b := filepath.Join(dir, "a"+dt), filepath.Join(dir, "b"+dt)
			for _, x := range [][2]string{{fx.adapter, a}, {pe, b}} {
				if _, err := Export(context.Background(), Options{Adapter: x[0], Base: fx.base, Out: x[1], DType: dt}); err != nil {
					t.Fatal(err)
				}
			}
			ta, tb := readTensors(t, a), readTensors(t, b)
			for name, x := range ta {
				if !bytes.Equal(x.Data, tb[name].Data) {
					t.Errorf("kimi %v dtype %q: %s differs after the PEFT round trip", kimi, dt, name)
				}
			}
		}
	}
}

func readTensorsFile(t *testing.T, path string) map[string]safetensors.Tensor {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]safetensors.Tensor{}
	for _, x := range f.Tensors {
		out[x.Name] = x
	}
	return out
}
