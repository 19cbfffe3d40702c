package export

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/quant"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// kimiGroup is the INT4 group size of the wrapped test bases.
const kimiGroup = 8

// kimiWrap rewrites the DeepSeek-V3 directory src in Kimi K2.5/K2.6's
// layout (tinker-cookbook's test_export_kimi_k25.py, vLLM's kimi_k25.py):
// config.json kimi_k25 with the text model in text_config, the text
// tensors under language_model., and a vision tower and projector beside
// them. With int4, the routed experts are stored as K2.6 ships them
// (compressed-tensors pack-quantized, quantization_config in
// text_config); the returned plain directory holds their dequantised
// values as float32, the model the wrapper stands for.
func kimiWrap(t *testing.T, src string, int4 bool) (wrapped, plain string) {
	t.Helper()
	var text map[string]any
	srcCfg, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil || json.Unmarshal(srcCfg, &text) != nil {
		t.Fatalf("read %s config.json: %v", src, err)
	}
	outer := map[string]any{"model_type": "kimi_k25", "architectures": []string{"KimiK25ForConditionalGeneration"},
		"text_config": text, "vision_config": map[string]any{"hidden_size": 8}}
	text["model_type"] = "kimi_k2"
	plain = t.TempDir()
	var wts, pts []safetensors.Tensor
	for name, x := range readTensors(t, src) {
		if int4 && strings.Contains(name, ".mlp.experts.") {
			parts, deq := int4Parts(t, name, x)
			wts, pts = append(wts, parts...), append(pts, deq)
		} else {
			wts, pts = append(wts, x), append(pts, x)
		}
	}
	for i := range wts {
		wts[i].Name = kimiPrefix + wts[i].Name
	}
	if int4 {
		text["quantization_config"] = map[string]any{"quant_method": "compressed-tensors", "format": "pack-quantized",
			"config_groups": map[string]any{"group_0": map[string]any{"targets": []string{"Linear"},
				"weights": map[string]any{"num_bits": 4, "group_size": kimiGroup, "symmetric": true, "type": "int", "strategy": "group"}}}}
	}
	wrapped = t.TempDir()
	cfg, _ := json.Marshal(outer)
	writeFile(t, wrapped, "config.json", cfg)
	writeFile(t, plain, "config.json", srcCfg)
	writeTensorShards(t, wrapped, append(wts, kimiVision()...), 2)
	writeTensorShards(t, plain, pts, 2)
	return wrapped, plain
}

// int4Parts quantises a float32 weight into its packed, scale and shape
// tensors (lib/quant's encoder) and returns its dequantised values.
func int4Parts(t *testing.T, name string, x safetensors.Tensor) ([]safetensors.Tensor, safetensors.Tensor) {
	v, err := x.Float32()
	if err != nil {
		t.Fatal(err)
	}
	rows, cols := int(x.Shape[0]), int(x.Shape[1])
	packed, scales := make([]byte, rows*cols/2), make([]byte, 2*rows*cols/kimiGroup)
	for r := range rows {
		quant.Int4Quantize(v[r*cols:(r+1)*cols], kimiGroup, packed[r*cols/2:], scales[r*2*cols/kimiGroup:])
	}
	quant.Int4Rows(packed, scales, cols, kimiGroup, 0, rows, v)
	deq, _ := safetensors.EncodeFloat32(safetensors.F32, v)
	shape := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, uint32(rows)), uint32(cols))
	base := strings.TrimSuffix(name, ".weight") + ".weight"
	return []safetensors.Tensor{
		{Name: base + "_packed", DType: safetensors.I32, Shape: []int64{int64(rows), int64(cols / 8)}, Data: packed},
		{Name: base + "_scale", DType: safetensors.BF16, Shape: []int64{int64(rows), int64(cols / kimiGroup)}, Data: scales},
		{Name: base + "_shape", DType: safetensors.I32, Shape: []int64{2}, Data: shape},
	}, safetensors.Tensor{Name: name, DType: safetensors.F32, Shape: x.Shape, Data: deq}
}

// kimiVision stands for the vision tower and projector (bfloat16 and
// float32, one named like a projection's weight).
func kimiVision() []safetensors.Tensor {
	return []safetensors.Tensor{
		{Name: "vision_tower.encoder.blocks.0.wqkv.weight", DType: safetensors.BF16, Shape: []int64{3, 2}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{Name: "mm_projector.proj.0.weight", DType: safetensors.F32, Shape: []int64{1, 2}, Data: []byte{0, 0, 128, 63, 0, 0, 0, 64}},
		{Name: "vision_tower.encoder.blocks.0.mlp.down_proj.weight", DType: safetensors.BF16, Shape: []int64{1, 2}, Data: []byte{9, 9, 9, 9}},
	}
}

// An adapter trained on tiny-deepseek, merged into its Kimi K2.5/K2.6
// wrapper and run by the engine as a plain base, gives the engine's
// on-the-fly LoRA logprobs on the wrapper within float32 rounding, with
// the routed experts in float32 and INT4 packed (dequantised by
// --dtype float32); the vision tensors come through byte for byte, also
// when the text model is retyped or the experts requantised. The PEFT
// export names its modules under language_model., computes the same
// logprobs and merges into the same bytes.
func TestKimiK25MergedMatchesEngine(t *testing.T) {
	ad := deepseekTrained(t)
	for _, int4 := range []bool{false, true} {
		t.Run(map[bool]string{false: "float32", true: "int4"}[int4], func(t *testing.T) {
			base, plain := kimiWrap(t, deepseekBase(t, safetensors.F32), int4)
			want := referenceLogprobs(t, base, ad)
			if d := maxDiff(want, referenceLogprobs(t, plain, ad)); d != 0 {
				t.Fatalf("the wrapper computes other logprobs than its text model (max diff %g)", d)
			}
			if d := maxDiff(want, servedLogprobs(t, base)); d < 1e-2 {
				t.Errorf("the adapter changes logprobs by only %g: the test proves nothing", d)
			}
			out := filepath.Join(t.TempDir(), "merged")
			if _, err := Export(context.Background(), Options{Adapter: ad, Base: base, Out: out, DType: "float32"}); err != nil {
				t.Fatal(err)
			}
			t.Logf("merged vs wrapper + adapter: max logprob diff %g", maxDiff(want, servedLogprobs(t, out)))
			if d := maxDiff(want, servedLogprobs(t, out)); d > 1e-4 {
				t.Errorf("merged logprobs differ from the wrapper + adapter by %g", d)
			}
			checkVision(t, out, "")
			if int4 {
				checkKimiRequantised(t, base, ad, want)
			}
		})
	}
	base, _ := kimiWrap(t, deepseekBase(t, safetensors.F32), false)
	checkKimiPEFT(t, base, ad)
}

// checkVision: the vision tensors of out are the base's bytes, and the
// text model's are in dtype dt ("" any).
func checkVision(t *testing.T, out string, dt safetensors.DType) {
	t.Helper()
	got := readTensors(t, out)
	for _, v := range kimiVision() {
		x, ok := got[v.Name]
		if !ok || x.DType != v.DType || !slices.Equal(x.Shape, v.Shape) || !bytes.Equal(x.Data, v.Data) {
			t.Errorf("%s: vision tensor %s is %s %v, want the base's %s %v bytes", out, v.Name, x.DType, x.Shape, v.DType, v.Shape)
		}
	}
	if x := got[kimiPrefix+"model.embed_tokens.weight"]; dt != "" && x.DType != dt {
		t.Errorf("text tensors written as %s, want %s", x.DType, dt)
	}
}

// checkKimiRequantised: the default merge of an INT4 wrapper keeps the
// experts packed under language_model. and the engine runs it, within
// the requantisation's error; --dtype bfloat16 retypes the text model
// only.
func checkKimiRequantised(t *testing.T, base, ad string, want []float64) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "requantised")
	if _, err := Export(context.Background(), Options{Adapter: ad, Base: base, Out: out}); err != nil {
		t.Fatal(err)
	}
	got := readTensors(t, out)
	e := kimiPrefix + "model.layers.1.mlp.experts.0.gate_proj.weight"
	if _, ok := got[e+"_packed"]; !ok || got[e].Name != "" {
		t.Errorf("requantised merge: %s_packed present %v, %s present %v", e, ok, e, got[e].Name != "")
	}
	t.Logf("requantised INT4 merge vs wrapper + adapter: max logprob diff %g", maxDiff(want, servedLogprobs(t, out)))
	if d := maxDiff(want, servedLogprobs(t, out)); d > 0.5 {
		t.Errorf("requantised merge logprobs differ by %g", d)
	}
	checkVision(t, out, "")
	bf := filepath.Join(t.TempDir(), "bf16")
	if _, err := Export(context.Background(), Options{Adapter: ad, Base: base, Out: bf, DType: "bfloat16"}); err != nil {
		t.Fatal(err)
	}
	checkVision(t, bf, safetensors.BF16)
}

// checkKimiPEFT: the PEFT export against a wrapper names every module
// under language_model., applies to the wrapper as the original adapter
// does, and merges into the same bytes.
func checkKimiPEFT(t *testing.T, base, ad string) {
	t.Helper()
	pe := filepath.Join(t.TempDir(), "peft")
	if _, err := Export(context.Background(), Options{Adapter: ad, Base: base, Format: PEFT, Out: pe}); err != nil {
		t.Fatal(err)
	}
	for name := range readTensorsFile(t, filepath.Join(pe, "adapter_model.safetensors")) {
		if !strings.HasPrefix(name, "base_model.model."+kimiPrefix) {
			t.Fatalf("PEFT export tensor %s is not under language_model.", name)
		}
	}
	checkPEFTSame(t, base, ad, pe)
}
