package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// wrapKimiK25 rewrites the DeepSeek-V3 model directory src in Kimi
// K2.5/K2.6's layout: config.json with the text model in text_config
// (token ids and tie_word_embeddings left on the wrapper, text_config's
// model_type dropped when noType), every tensor under language_model.,
// and vision tensors beside them, some named like text tensors after the
// prefix.
func wrapKimiK25(t *testing.T, src string, noType bool) string {
	t.Helper()
	var text map[string]any
	b, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil || json.Unmarshal(b, &text) != nil {
		t.Fatalf("read %s config.json: %v", src, err)
	}
	outer := map[string]any{"model_type": "kimi_k25", "architectures": []string{"KimiK25ForConditionalGeneration"},
		"vision_config": map[string]any{"hidden_size": 8}, "text_config": text}
	for _, k := range []string{"bos_token_id", "eos_token_id", "tie_word_embeddings"} {
		if v, ok := text[k]; ok {
			outer[k] = v
			delete(text, k)
		}
	}
	if noType {
		delete(text, "model_type")
	}
	dst := t.TempDir()
	cfg, _ := json.Marshal(outer)
	files, err := weightFiles(src)
	if err != nil {
		t.Fatal(err)
	}
	weightMap := map[string]string{}
	for i, path := range files {
		f, err := safetensors.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []safetensors.Tensor
		for _, x := range f.Tensors {
			x.Name = kimiTextPrefix + x.Name
			out = append(out, x)
		}
		if i == 0 {
			out = append(out, visionTensors()...)
		}
		name := filepath.Base(path)
		for _, x := range out {
			weightMap[x.Name] = name
		}
		slices.SortFunc(out, func(a, b safetensors.Tensor) int { return strings.Compare(a.Name, b.Name) })
		w, err := os.Create(filepath.Join(dst, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := safetensors.Write(w, out, map[string]string{"format": "pt"}); err != nil {
			t.Fatal(err)
		}
		w.Close()
		f.Close()
	}
	idx, _ := json.Marshal(map[string]any{"weight_map": weightMap})
	for name, b := range map[string][]byte{"config.json": cfg, "model.safetensors.index.json": idx} {
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// visionTensors stand for the vision tower and projector: a bias named
// as a projection's, an FP8-typed tensor with scales, and names that
// would be text tensors' if the prefix were ignored.
func visionTensors() []safetensors.Tensor {
	f32 := func(name string, shape []int64) safetensors.Tensor {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		data, _ := safetensors.EncodeFloat32(safetensors.F32, make([]float32, n))
		return safetensors.Tensor{Name: name, DType: safetensors.F32, Shape: shape, Data: data}
	}
	return []safetensors.Tensor{
		f32("vision_tower.encoder.blocks.0.wqkv.weight", []int64{6, 2}),
		f32("vision_tower.encoder.blocks.0.q_proj.bias", []int64{3}),
		f32("mm_projector.proj.0.weight", []int64{4, 2}),
		f32("vision_tower.model.layers.0.self_attn.o_proj.weight_scale_inv", []int64{1, 1}),
		{Name: "vision_tower.model.layers.0.self_attn.o_proj.weight", DType: safetensors.F8E4M3, Shape: []int64{2, 2}, Data: make([]byte, 4)},
		f32("vision_tower.lm_head.weight", []int64{2, 2}),
	}
}

// A Kimi K2.5/K2.6 directory (model_type kimi_k25) loads as its text model
// and computes the bits of the same weights in a plain DeepSeek-V3
// directory: float32, and with INT4 packed routed experts (as K2.6 ships
// them) against their dequantised values.
func TestKimiK25Dir(t *testing.T) {
	c, ts, _ := TinyTensors(models.TinyDeepSeek)
	plain := t.TempDir()
	writeHFDir(t, plain, c, ts, safetensors.F32, 2)
	qdir, fdir, _ := qtDirs(t, true, false, nil)
	m := mustLoad(t, models.TinyDeepSeek)
	prompt := m.Tokenizer().Encode("Kimi K2.5", true)
	for _, tc := range []struct {
		name       string
		src, plain string
		noType     bool
	}{{"float32", plain, plain, false}, {"no text model_type", plain, plain, true}, {"int4", qdir, fdir, false}} {
		t.Run(tc.name, func(t *testing.T) {
			wrapped := wrapKimiK25(t, tc.src, tc.noType)
			k, err := LoadDir(wrapped)
			if err != nil {
				t.Fatal(err)
			}
			p, err := LoadDir(tc.plain)
			if err != nil {
				t.Fatal(err)
			}
			want := p.Config()
			want.TextPrefix = kimiTextPrefix
			if got := k.Config(); got.TextPrefix != kimiTextPrefix || got.Family != models.DeepSeekV3 || !reflect.DeepEqual(got, want) {
				t.Errorf("config %+v, want %+v", got, want)
			}
			if a, b := promptLogprobs(t, k, prompt), promptLogprobs(t, p, prompt); !slices.Equal(a, b) {
				t.Errorf("kimi_k25 directory logprobs %v, plain %v", a, b)
			}
		})
	}
}

// A PEFT adapter written for the wrapper (modules under language_model.)
// applies to a kimi_k25 model as the same adapter without the prefix does.
func TestKimiK25AdapterNames(t *testing.T) {
	c, _ := TinyConfig(models.TinyDeepSeek)
	ts := randomLoRA(c, 2, 5, false)
	prefixed := Tensors{}
	for n, x := range ts {
		prefixed[strings.Replace(n, "base_model.model.", "base_model.model."+kimiTextPrefix, 1)] = x
	}
	c.TextPrefix = kimiTextPrefix
	a, err := NewLoRA(c, ts, 2, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewLoRA(c, prefixed, 2, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	if a.Modules() == 0 || a.Modules() != b.Modules() {
		t.Errorf("modules %d and %d", a.Modules(), b.Modules())
	}
	c.TextPrefix = ""
	if _, err := NewLoRA(c, prefixed, 2, 4, false); err == nil {
		t.Error("a plain model took language_model. adapter names")
	}
}

// Wrappers the engine cannot run are refused in one line.
func TestKimiK25ConfigErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"model_type":"kimi_k25"}`:                                                        "no text_config",
		`{"model_type":"kimi_k25","text_config":[1]}`:                                      "no text_config",
		`{"model_type":"kimi_k25","text_config":{"model_type":"qwen3"}}`:                   `model_type "qwen3"`,
		`{"model_type":"kimi_k25","text_config":{"model_type":7}}`:                         "not a string",
		`{"model_type":"kimi_k25","text_config":{"model_type":"kimi_k2","hidden_size":0}}`: "kimi_k25 text_config: ",
	} {
		_, err := ParseConfig([]byte(cfg))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", cfg, err, want)
		}
	}
}
