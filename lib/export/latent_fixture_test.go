package export

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// latentFixture is a tiny DeepSeek V3 / Kimi K2 base in the released
// checkpoints' layout with its weights' exact values (float64, from the
// stored codes and scales), and a service-layout adapter with its
// updates computed in float64.
type latentFixture struct {
	base, adapter string
	prefix        string               // "language_model." for Kimi K2.5/K2.6
	kind          map[string]string    // logical weight name -> fp8, int4 or plain
	shape         map[string][2]int    // logical weight name -> rows, cols
	ref           map[string][]float64 // base values
	delta         map[string][]float64 // the adapter's update, by logical weight name
}

const (
	fxHidden, fxQA, fxKVA, fxOIn, fxInter, fxExperts, fxVocab = 32, 24, 20, 24, 16, 3, 40
	fxRank, fxAlpha                                           = 4, 8
	fxGroup                                                   = 16
)

var fxBlock = [2]int{8, 32} // 32 wide: weights of 32 columns take the block-at-a-time path (latent_tiles.go), narrower ones the row bands

// newLatentFixture writes the base: DeepSeek V3.1 with every linear map in
// FP8 blocks (kimi false), or Kimi K2.6 (kimi_k25, language_model.
// prefix) with INT4 routed experts and the rest in bfloat16.
func newLatentFixture(t *testing.T, kimi bool) *latentFixture {
	fx := &latentFixture{base: t.TempDir(), kind: map[string]string{}, shape: map[string][2]int{}, ref: map[string][]float64{}, delta: map[string][]float64{}}
	cfg := map[string]any{"model_type": "deepseek_v3", "architectures": []string{"DeepseekV3ForCausalLM"},
		"quantization_config": map[string]any{"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": fxBlock[:]}}
	linear, experts := "fp8", "fp8"
	if kimi {
		fx.prefix, linear, experts = kimiPrefix, "plain", "int4"
		cfg = map[string]any{"model_type": "kimi_k25", "architectures": []string{"KimiK25ForConditionalGeneration"},
			"text_config": map[string]any{"model_type": "kimi_k2"},
			"quantization_config": map[string]any{"quant_method": "compressed-tensors", "format": "pack-quantized",
				"config_groups": map[string]any{"group_0": map[string]any{"targets": []string{"Linear"},
					"weights": map[string]any{"num_bits": 4, "group_size": fxGroup, "symmetric": true, "type": "int", "strategy": "group"}}}}}
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	writeFile(t, fx.base, "config.json", b)
	writeFile(t, fx.base, "tokenizer_config.json", []byte("{}\n"))
	r := rand.New(rand.NewPCG(11, 12))
	var ts []safetensors.Tensor
	mat := func(path, kind string, rows, cols int) {
		ts = append(ts, fx.matrix(r, fx.prefix+path+".weight", kind, rows, cols)...)
	}
	for _, p := range []string{"model.embed_tokens", "lm_head"} {
		mat(p, "plain", fxVocab, fxHidden)
	}
	for i := range 2 {
		p := fmt.Sprintf("model.layers.%d.", i)
		mat(p+"self_attn.q_a_proj", linear, fxQA, fxHidden)
		mat(p+"self_attn.q_b_proj", linear, fxOIn, fxQA)
		mat(p+"self_attn.kv_a_proj_with_mqa", linear, fxKVA, fxHidden)
		mat(p+"self_attn.o_proj", linear, fxHidden, fxOIn)
		mlp := []string{p + "mlp."}
		if i == 1 {
			mlp = []string{p + "mlp.shared_experts."}
			mat(p+"mlp.gate", "plain", fxExperts, fxHidden)
		}
		for _, q := range mlp {
			mat(q+"gate_proj", linear, fxInter, fxHidden)
			mat(q+"up_proj", linear, fxInter, fxHidden)
			mat(q+"down_proj", linear, fxHidden, fxInter)
		}
		for e := range fxExperts * i {
			q := fmt.Sprintf("%smlp.experts.%d.", p, e)
			mat(q+"gate_proj", experts, fxInter, fxHidden)
			mat(q+"up_proj", experts, fxInter, fxHidden)
			mat(q+"down_proj", experts, fxHidden, fxInter)
		}
	}
	writeTensorShards(t, fx.base, ts, 2)
	fx.adapter = fx.writeAdapter(t, rand.New(rand.NewPCG(13, 14)))
	return fx
}

// matrix makes one weight's stored tensors and records its values.
func (fx *latentFixture) matrix(r *rand.Rand, name, kind string, rows, cols int) []safetensors.Tensor {
	fx.kind[name], fx.shape[name] = kind, [2]int{rows, cols}
	ref := make([]float64, rows*cols)
	fx.ref[name] = ref
	shape := []int64{int64(rows), int64(cols)}
	switch kind {
	case "fp8":
		nbc := ceilDiv(cols, fxBlock[1])
		scales := make([]float32, ceilDiv(rows, fxBlock[0])*nbc)
		for i := range scales {
			scales[i] = float32(0.0005 + 0.002*r.Float64())
		}
		codes := make([]byte, rows*cols)
		for i := range codes {
			codes[i] = byte(r.IntN(256))
			if codes[i]&0x7f == 0x7f {
				codes[i]--
			}
			ref[i] = testFP8(codes[i]) * float64(scales[(i/cols/fxBlock[0])*nbc+(i%cols)/fxBlock[1]])
		}
		sb, _ := safetensors.EncodeFloat32(safetensors.F32, scales)
		return []safetensors.Tensor{{Name: name, DType: safetensors.F8E4M3, Shape: shape, Data: codes},
			{Name: name + "_scale_inv", DType: safetensors.F32, Shape: []int64{int64(ceilDiv(rows, fxBlock[0])), int64(nbc)}, Data: sb}}
	case "int4":
		packed, scales := make([]byte, rows*cols/2), make([]byte, rows*cols/fxGroup*2)
		for g := range rows * cols / fxGroup {
			binary.LittleEndian.PutUint16(scales[2*g:], safetensors.Float32ToBF16(float32(0.002+0.01*r.Float64())))
		}
		for i := range rows * cols {
			q := r.IntN(16) - 8
			packed[i/2] |= byte(q&15) << (4 * (i % 2))
			ref[i] = float64(q) * float64(safetensors.BF16ToFloat32(binary.LittleEndian.Uint16(scales[2*(i/fxGroup):])))
		}
		sh := make([]byte, 8)
		binary.LittleEndian.PutUint32(sh, uint32(rows))
		binary.LittleEndian.PutUint32(sh[4:], uint32(cols))
		return []safetensors.Tensor{{Name: name + "_packed", DType: safetensors.I32, Shape: []int64{int64(rows), int64(cols / 8)}, Data: packed},
			{Name: name + "_scale", DType: safetensors.BF16, Shape: []int64{int64(rows), int64(cols / fxGroup)}, Data: scales},
			{Name: name + "_shape", DType: safetensors.I32, Shape: []int64{2}, Data: sh}}
	}
	vals := make([]float32, rows*cols)
	for i := range vals {
		vals[i] = safetensors.BF16ToFloat32(safetensors.Float32ToBF16(float32(r.NormFloat64() * 0.02)))
		ref[i] = float64(vals[i])
	}
	data, _ := safetensors.EncodeFloat32(safetensors.BF16, vals)
	return []safetensors.Tensor{{Name: name, DType: safetensors.BF16, Shape: shape, Data: data}}
}

// testFP8 decodes E4M3 from its definition.
func testFP8(c byte) float64 {
	e, m := int(c>>3)&15, float64(c&7)
	v := math.Ldexp(1+m/8, e-7)
	if e == 0 {
		v = m / 8 * math.Ldexp(1, -6)
	}
	if c&0x80 != 0 {
		return -v
	}
	return v
}

// writeAdapter writes the service's layout: attention q_a/kv_a/o, the
// dense MLP, shared experts, stacked experts whose hidden-side factor is
// shared, and the unembedding as model.unembed_tokens.
func (fx *latentFixture) writeAdapter(t *testing.T, r *rand.Rand) string {
	dir := t.TempDir()
	var ts []safetensors.Tensor
	randoms := func(n int, sd float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * sd)
		}
		return v
	}
	put := func(name string, shape []int64, v []float32) {
		data, _ := safetensors.EncodeFloat32(safetensors.F32, v)
		ts = append(ts, safetensors.Tensor{Name: "base_model.model." + name, DType: safetensors.F32, Shape: shape, Data: data})
	}
	// pair adds one module's halves; ea/eb experts (0: plain 2-D) and
	// the logical weights each expert's update goes to.
	pair := func(path string, out, in, ea, eb int, targets []string) {
		a, b := randoms(max(ea, 1)*fxRank*in, 0.3), randoms(max(eb, 1)*out*fxRank, 0.02)
		sa, sb := []int64{fxRank, int64(in)}, []int64{int64(out), fxRank}
		if ea > 0 {
			sa, sb = append([]int64{int64(ea)}, sa...), append([]int64{int64(eb)}, sb...)
		}
		put(path+".lora_A.weight", sa, a)
		put(path+".lora_B.weight", sb, b)
		for e, w := range targets {
			fx.delta[fx.prefix+w] = testDelta(a[(e%max(ea, 1))*fxRank*in:], b[(e%max(eb, 1))*out*fxRank:], out, in)
		}
	}
	for i := range 2 {
		p := fmt.Sprintf("model.layers.%d.", i)
		pair(p+"self_attn.q_a_proj", fxQA, fxHidden, 0, 0, []string{p + "self_attn.q_a_proj.weight"})
		pair(p+"self_attn.kv_a_proj_with_mqa", fxKVA, fxHidden, 0, 0, []string{p + "self_attn.kv_a_proj_with_mqa.weight"})
		pair(p+"self_attn.o_proj", fxHidden, fxOIn, 0, 0, []string{p + "self_attn.o_proj.weight"})
		q := p + "mlp."
		if i == 1 {
			q = p + "mlp.shared_experts."
		}
		for _, m := range [][3]any{{"gate_proj", fxInter, fxHidden}, {"up_proj", fxInter, fxHidden}, {"down_proj", fxHidden, fxInter}} {
			pair(q+m[0].(string), m[1].(int), m[2].(int), 0, 0, []string{q + m[0].(string) + ".weight"})
		}
		if i == 1 {
			for _, w := range [][4]any{{"w1", "gate_proj", 1, fxExperts}, {"w3", "up_proj", 1, fxExperts}, {"w2", "down_proj", fxExperts, 1}} {
				var targets []string
				for e := range fxExperts {
					targets = append(targets, fmt.Sprintf("%smlp.experts.%d.%s.weight", p, e, w[1]))
				}
				out, in := fxInter, fxHidden
				if w[0] == "w2" {
					out, in = in, out
				}
				pair(p+"mlp.experts."+w[0].(string), out, in, w[2].(int), w[3].(int), targets)
			}
		}
	}
	pair("model.unembed_tokens", fxVocab, fxHidden, 0, 0, []string{"lm_head.weight"})
	ac := peft.AdapterConfig{R: fxRank, LoraAlpha: fxAlpha, PeftType: "LORA", BaseModelNameOrPath: "deepseek-ai/DeepSeek-V3.1"}
	if fx.prefix != "" {
		ac.BaseModelNameOrPath = "moonshotai/Kimi-K2.6"
	}
	b, _ := json.Marshal(ac)
	writeFile(t, dir, peft.ConfigFile, b)
	writeTensorShards(t, dir, ts, 0)
	return dir
}

// testDelta is (alpha/r)·B·A in float64.
func testDelta(a, b []float32, out, in int) []float64 {
	d := make([]float64, out*in)
	for o := range out {
		for i := range in {
			var s float64
			for k := range fxRank {
				s += float64(b[o*fxRank+k]) * float64(a[k*in+i])
			}
			d[o*in+i] = s * fxAlpha / fxRank
		}
	}
	return d
}

// writeTensorShards writes ts over n shards (n 0: one
// adapter_model.safetensors).
func writeTensorShards(t *testing.T, dir string, ts []safetensors.Tensor, n int) {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	if n == 0 {
		writeSafetensors(t, filepath.Join(dir, peft.WeightsFile), ts)
		return
	}
	// A weight and its scales stay in one shard, as released: shard k
	// takes the weights whose first tensor falls in its share.
	parts := make([][]safetensors.Tensor, n)
	k := 0
	for i, x := range ts {
		if i > 0 && !sameWeight(x.Name, ts[i-1].Name) {
			k = i * n / len(ts)
		}
		parts[k] = append(parts[k], x)
	}
	if err := safetensors.WriteDir(dir, parts); err != nil {
		t.Fatal(err)
	}
}

func sameWeight(x, y string) bool {
	base := func(s string) string {
		for _, suf := range []string{"_scale_inv", "_scale", "_shape", "_packed"} {
			if w, ok := strings.CutSuffix(s, suf); ok {
				return w
			}
		}
		return s
	}
	return base(x) == base(y)
}

func writeSafetensors(t *testing.T, path string, ts []safetensors.Tensor) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := safetensors.Write(f, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
}
