package export

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// The hosted service shares each expert matrix's hidden-side LoRA factor
// across the experts (tinker-cookbook's hyperparam_utils.py counts them
// so): w1/w3 lora_A [1, r, hidden], w2 lora_B [1, hidden, r], the other
// factor per expert. These tests give the Qwen3-MoE and GPT-OSS exports
// such an adapter.

// sharedFactor matches the stacked tensors the service shares.
var sharedFactor = regexp.MustCompile(`\.mlp\.experts\.(?:w[13]\.lora_A|w2\.lora_B)\.weight$`)

// serviceAdapter rewrites the local adapter in dir as the service shapes
// it (shared: each shared factor one [1, ...] matrix of fresh random
// values) and as the same adapter in per-expert form (expanded: that
// matrix repeated for every expert). change, if set, edits the shared
// tensors' shapes, to make malformed adapters.
func serviceAdapter(t *testing.T, dir string, seed uint64, change func(name string, shape []int64) []int64) (shared, expanded string) {
	t.Helper()
	f, err := safetensors.ReadFile(filepath.Join(dir, peft.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(dir, peft.ConfigFile))
	r := rand.New(rand.NewPCG(seed, seed+1))
	var sh, ex []safetensors.Tensor
	for _, x := range f.Tensors {
		if !sharedFactor.MatchString(x.Name) {
			sh, ex = append(sh, x), append(ex, x)
			continue
		}
		shape := []int64{1, x.Shape[1], x.Shape[2]}
		if change != nil {
			shape = change(x.Name, shape)
		}
		one := make([]byte, 0, 4*shape[0]*shape[1]*shape[2])
		for range shape[0] * shape[1] * shape[2] {
			one = binary.LittleEndian.AppendUint32(one, math.Float32bits(float32(r.NormFloat64()*0.15)))
		}
		sh = append(sh, safetensors.Tensor{Name: x.Name, DType: safetensors.F32, Shape: shape, Data: one})
		ex = append(ex, safetensors.Tensor{Name: x.Name, DType: safetensors.F32, Shape: []int64{x.Shape[0], shape[1], shape[2]},
			Data: []byte(strings.Repeat(string(one[:4*shape[1]*shape[2]]), int(x.Shape[0])))})
	}
	var dirs [2]string
	for i, ts := range [][]safetensors.Tensor{sh, ex} {
		out := filepath.Join(t.TempDir(), []string{"shared", "expanded"}[i])
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, out, peft.ConfigFile, cfg)
		writeSafetensors(t, filepath.Join(out, peft.WeightsFile), ts)
		dirs[i] = out
	}
	return dirs[0], dirs[1]
}

// expertAt says where element [o, i] of expert e's matrix proj (in
// columns wide) is in a base's layout: tensor name and flat index.
type expertAt func(layer, e int, proj string, o, i, in int) (string, int)

// perExpertAt is transformers 4.x's experts.N.gate_proj.weight [out, in].
func perExpertAt(layer, e int, proj string, o, i, in int) (string, int) {
	return fmt.Sprintf("model.layers.%d.mlp.experts.%d.%s.weight", layer, e, proj), o*in + i
}

// qwenFusedAt is Qwen3-MoE in transformers 5.x: gate_up_proj [E, 2I, H]
// (gate rows, then up rows) and down_proj [E, H, I].
func qwenFusedAt(hidden, inter int) expertAt {
	return func(layer, e int, proj string, o, i, in int) (string, int) {
		p := fmt.Sprintf("model.layers.%d.mlp.experts.", layer)
		switch proj {
		case "down_proj":
			return p + "down_proj", (e*hidden+o)*inter + i
		case "up_proj":
			return p + "gate_up_proj", ((2*e+1)*inter+o)*hidden + i
		}
		return p + "gate_up_proj", (2*e*inter+o)*hidden + i
	}
}

// gptOssAt is GPT-OSS: gate_up_proj [E, H, 2I] input-major, gate and up
// interleaved; down_proj [E, I, H] input-major.
func gptOssAt(hidden, inter int) expertAt {
	return func(layer, e int, proj string, o, i, in int) (string, int) {
		p := fmt.Sprintf("model.layers.%d.mlp.experts.", layer)
		switch proj {
		case "down_proj":
			return p + "down_proj", (e*inter+i)*hidden + o
		case "up_proj":
			return p + "gate_up_proj", (e*hidden+i)*2*inter + 2*o + 1
		}
		return p + "gate_up_proj", (e*hidden+i)*2*inter + 2*o
	}
}

var stackedName = regexp.MustCompile(`^base_model\.model\.model\.layers\.(\d+)\.mlp\.experts\.(w[123])\.lora_A\.weight$`)

// checkExpertsMerged compares every expert weight of the merged model out
// with a float64 merge, base + alpha/r·B·A per expert, a [1, ...] factor
// standing for every expert; it returns the largest update, so the
// caller can check the adapter changed something.
func checkExpertsMerged(t *testing.T, base, adapter, out string, at expertAt, tol float64) float64 {
	t.Helper()
	var cfg struct {
		R     int     `json:"r"`
		Alpha float64 `json:"lora_alpha"`
	}
	b, _ := os.ReadFile(filepath.Join(adapter, peft.ConfigFile))
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	scale := cfg.Alpha / float64(cfg.R)
	ad, bt, mt := readTensorsFile(t, filepath.Join(adapter, peft.WeightsFile)), readTensors(t, base), readTensors(t, out)
	decoded := map[*map[string]safetensors.Tensor]map[string][]float32{&ad: {}, &bt: {}, &mt: {}}
	vals := func(ts *map[string]safetensors.Tensor, name string) []float32 {
		if v, ok := decoded[ts][name]; ok {
			return v
		}
		x, ok := (*ts)[name]
		if !ok {
			t.Fatalf("no tensor %s", name)
		}
		v, err := x.Float32()
		if err != nil {
			t.Fatal(err)
		}
		decoded[ts][name] = v
		return v
	}
	var checked int
	var biggest, worst float64
	for name := range ad {
		sm := stackedName.FindStringSubmatch(name)
		if sm == nil {
			continue
		}
		var layer int
		fmt.Sscan(sm[1], &layer)
		proj := map[string]string{"w1": "gate_proj", "w3": "up_proj", "w2": "down_proj"}[sm[2]]
		A, B := ad[name], ad[strings.Replace(name, "lora_A", "lora_B", 1)]
		av, bv := vals(&ad, name), vals(&ad, B.Name)
		r, in, rows := cfg.R, int(A.Shape[2]), int(B.Shape[1])
		experts := int(max(A.Shape[0], B.Shape[0]))
		for e := range experts {
			ea, eb := e%int(A.Shape[0]), e%int(B.Shape[0]) // 0 for a shared factor
			for o := range rows {
				for i := range in {
					d := 0.0
					for k := range r {
						d += float64(bv[(eb*rows+o)*r+k]) * float64(av[(ea*r+k)*in+i])
					}
					d *= scale
					tn, idx := at(layer, e, proj, o, i, in)
					want := float64(vals(&bt, tn)[idx]) + d
					got := float64(vals(&mt, tn)[idx])
					worst, biggest = max(worst, math.Abs(got-want)/(1+math.Abs(want))), max(biggest, math.Abs(d))
					checked++
				}
			}
		}
	}
	t.Logf("%d expert weights within %g of the float64 merge (largest update %g)", checked, worst, biggest)
	if checked == 0 || worst > tol {
		t.Errorf("%d expert weights checked, worst relative error %g > %g", checked, worst, tol)
	}
	return biggest
}

// sameFiles fails unless dirs x and y hold byte-identical safetensors.
func sameFiles(t *testing.T, x, y, what string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(x, "*.safetensors"))
	if len(files) == 0 {
		t.Fatalf("%s: no weights in %s", what, x)
	}
	for _, p := range files {
		a, _ := os.ReadFile(p)
		b, _ := os.ReadFile(filepath.Join(y, filepath.Base(p)))
		if string(a) != string(b) {
			t.Errorf("%s: %s differs", what, filepath.Base(p))
		}
	}
}

// export runs a merged (or PEFT) export and fails the test on error.
func exportTo(t *testing.T, o Options) string {
	t.Helper()
	o.Out = filepath.Join(t.TempDir(), "out")
	if _, err := Export(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	return o.Out
}

// A Qwen3-MoE adapter in the service's shared form merges into both base
// layouts as a float64 merge with the factor broadcast says, to the same
// bytes as its per-expert form, with the engine's logprobs; its PEFT
// export merges to the same bytes again.
func TestSharedExpertsQwen3MoE(t *testing.T) {
	c, _, err := engine.TinyTensors(models.TinyQwen3MoE)
	if err != nil {
		t.Fatal(err)
	}
	shared, expanded := serviceAdapter(t, moeAdapter(t), 11, nil)
	for _, fused := range []bool{false, true} {
		base := moeBase(t, fused)
		at := expertAt(perExpertAt)
		if fused {
			at = qwenFusedAt(c.Hidden, c.MoEIntermediate)
		}
		out := exportTo(t, Options{Adapter: shared, Base: base})
		if d := checkExpertsMerged(t, base, shared, out, at, 2e-6); d < 1e-2 {
			t.Errorf("largest expert update %g: the test proves nothing", d)
		}
		sameFiles(t, out, exportTo(t, Options{Adapter: expanded, Base: base}), "shared vs per-expert form")
		if d := maxDiff(referenceLogprobs(t, base, expanded), servedLogprobs(t, out)); d > 1e-4 {
			t.Errorf("fused=%v: merged logprobs differ from the engine's by %g", fused, d)
		}
		if !fused {
			pe := exportTo(t, Options{Adapter: shared, Format: PEFT})
			sameFiles(t, out, exportTo(t, Options{Adapter: pe, Base: base}), "merged PEFT export vs merged original")
		}
	}
}

// renameTensors replaces old by new in the names of dir's adapter tensors.
func renameTensors(t *testing.T, dir, old, new string) {
	t.Helper()
	path := filepath.Join(dir, peft.WeightsFile)
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for i := range f.Tensors {
		if s := strings.Replace(f.Tensors[i].Name, old, new, 1); s != f.Tensors[i].Name {
			f.Tensors[i].Name, n = s, n+1
		}
	}
	if n == 0 {
		t.Fatalf("no tensor of %s has %q", dir, old)
	}
	writeSafetensors(t, path, f.Tensors)
}

// A GPT-OSS adapter in the service's form (shared factors, attention
// named .attn) merges into an
// unquantised base as the float64 merge says, and into an MXFP4 one to the
// same bytes as its per-expert form; its PEFT export is refused as the
// per-expert form's is.
func TestSharedExpertsGptOss(t *testing.T) {
	c, _, err := engine.TinyTensors(models.TinyGptOss)
	if err != nil {
		t.Fatal(err)
	}
	shared, expanded := serviceAdapter(t, gptOssAdapter(t), 12, nil)
	renameTensors(t, shared, ".self_attn.", ".attn.") // the service's GPT-OSS names
	base := gptOssBase(t)
	out := exportTo(t, Options{Adapter: shared, Base: base})
	if d := checkExpertsMerged(t, base, shared, out, gptOssAt(c.Hidden, c.MoEIntermediate), 2e-6); d < 1e-2 {
		t.Errorf("largest expert update %g: the test proves nothing", d)
	}
	if d := maxDiff(referenceLogprobs(t, base, expanded), servedLogprobs(t, out)); d > 1e-4 {
		t.Errorf("merged logprobs differ from the engine's by %g", d)
	}
	mx := gptOssBaseOf(t, true)
	sameFiles(t, exportTo(t, Options{Adapter: shared, Base: mx}), exportTo(t, Options{Adapter: expanded, Base: mx}), "MXFP4: shared vs per-expert form")
}

// Malformed shared factors are refused in one line and nothing is written.
func TestSharedExpertsRefused(t *testing.T) {
	ad := moeAdapter(t)
	base := moeBase(t, false)
	layer0 := func(edit func(s []int64)) func(string, []int64) []int64 {
		return func(name string, s []int64) []int64 {
			if strings.Contains(name, ".layers.0.mlp.experts.w1.") {
				edit(s)
			}
			return s
		}
	}
	for _, tc := range []struct {
		name, want string
		edit       func(s []int64)
	}{
		{"two of eight", "lora_A for 2 experts and lora_B for 8", func(s []int64) { s[0] = 2 }},
		{"rank", "want [experts, 4, in]", func(s []int64) { s[1] = 5 }},
		{"width", "model.layers.0.mlp.experts.0.gate_proj", func(s []int64) { s[2]++ }},
	} {
		shared, _ := serviceAdapter(t, ad, 13, layer0(tc.edit))
		out := filepath.Join(t.TempDir(), "out")
		_, err := Export(context.Background(), Options{Adapter: shared, Base: base, Out: out})
		t.Logf("%s: %v", tc.name, err)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", tc.name, err, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: a refused export wrote %s", tc.name, out)
		}
	}
}

// An adapter with more experts than the base has is refused in both
// layouts, not merged in part.
func TestSharedExpertsTooMany(t *testing.T) {
	shared, _ := serviceAdapter(t, moeAdapter(t), 14, nil)
	path := filepath.Join(shared, peft.WeightsFile)
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := f.Tensors
	for i, x := range ts {
		if x.Name == "base_model.model.model.layers.0.mlp.experts.w1.lora_B.weight" {
			n := len(x.Data) / int(x.Shape[0])
			ts[i].Data = append(append([]byte{}, x.Data...), x.Data[:n]...)
			ts[i].Shape = []int64{x.Shape[0] + 1, x.Shape[1], x.Shape[2]}
		}
	}
	writeSafetensors(t, path, ts)
	for _, fused := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "out")
		_, err := Export(context.Background(), Options{Adapter: shared, Base: moeBase(t, fused), Out: out})
		t.Logf("fused=%v: %v", fused, err)
		if err == nil || !strings.Contains(err.Error(), "experts.8.gate_proj") || strings.Contains(err.Error(), "\n") {
			t.Errorf("fused=%v: %v, want one line naming experts.8.gate_proj", fused, err)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("fused=%v: a refused export wrote %s", fused, out)
		}
	}
}
