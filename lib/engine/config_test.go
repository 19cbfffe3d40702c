package engine

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// Abridged config.json files of real checkpoints (the fields the engine
// reads, in their published spelling).
const llama31Config = `{
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu", "hidden_size": 4096,
  "intermediate_size": 14336, "max_position_embeddings": 131072, "mlp_bias": false,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
  "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "rope_theta": 500000.0,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 128256}`

const qwen3Config = `{
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 4096, "intermediate_size": 12288, "max_position_embeddings": 40960,
  "max_window_layers": 36, "model_type": "qwen3", "num_attention_heads": 32, "num_hidden_layers": 36,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000,
  "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "use_sliding_window": false, "vocab_size": 151936}`

const llama32Config = `{
  "model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
  "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 128256,
  "tie_word_embeddings": true, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
  "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "bos_token_id": 128000,
  "eos_token_id": 128001, "max_position_embeddings": 131072}`

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(llama31Config))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Shape: models.Shape{Family: models.Llama3, VocabSize: 128256, Hidden: 4096, Intermediate: 14336,
		Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, RMSNormEps: 1e-5, RopeTheta: 500000, MaxPositionEmbeddings: 131072},
		RopeScaling: &RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192},
		BOSTokenID:  128000, EOSTokenIDs: []int{128001, 128008, 128009}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Llama-3.1-8B:\n got %+v\nwant %+v", c, want)
	}
	// Parameter counts published for these checkpoints.
	for _, tc := range []struct {
		name, json string
		params     int64
	}{
		{"Llama-3.1-8B", llama31Config, 8_030_261_248},
		{"Qwen3-8B", qwen3Config, 8_190_735_360},
		{"Llama-3.2-1B", llama32Config, 1_235_814_400},
	} {
		c, err := ParseConfig([]byte(tc.json))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := c.Params(); got != tc.params {
			t.Errorf("%s: %d parameters, want %d", tc.name, got, tc.params)
		}
	}
	q, _ := ParseConfig([]byte(qwen3Config))
	if q.Family != models.Qwen3 || q.RopeScaling != nil || q.HeadDim != 128 || !reflect.DeepEqual(q.EOSTokenIDs, []int{151645}) {
		t.Errorf("Qwen3-8B: %+v", q)
	}
	// transformers v5 moves rope settings into rope_parameters.
	v5, err := ParseConfig([]byte(`{"model_type":"llama","hidden_size":64,"intermediate_size":128,"num_hidden_layers":1,
		"num_attention_heads":4,"vocab_size":10,"rope_parameters":{"rope_type":"linear","factor":2,"rope_theta":1000}}`))
	if err != nil || v5.RopeTheta != 1000 || v5.RopeScaling.Type != "linear" || v5.KVHeads != 4 || v5.HeadDim != 16 {
		t.Errorf("rope_parameters: %+v, %v", v5, err)
	}
}

func TestParseConfigRejects(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"model_type":"mistral"}`, `model_type "mistral" is not supported`},
		{`{"model_type":"qwen3","num_experts":128}`, `model_type "qwen3" with experts is not supported`},
		{`{"model_type":"qwen3_moe","hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"vocab_size":1,"num_experts":4,"num_experts_per_tok":5,"moe_intermediate_size":8}`, "num_experts_per_tok between 1 and num_experts"},
		{`{"model_type":"qwen3_moe","hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"vocab_size":1,"num_experts":1000000000,"num_experts_per_tok":5,"moe_intermediate_size":8}`, "num_experts 1000000000 is more than"},
		{`{"model_type":"llama","hidden_size":64,"intermediate_size":1,"num_hidden_layers":1,"num_attention_heads":4,"vocab_size":1,"rope_scaling":{"rope_type":"dynamic","factor":4}}`, `rope scaling type "dynamic"`},
		{`{"model_type":"llama","hidden_size":64,"intermediate_size":1,"num_hidden_layers":1,"num_attention_heads":4,"vocab_size":1,"rope_scaling":{"rope_type":"yarn","factor":4}}`, "yarn rope_scaling needs original_max_position_embeddings"},
		{`{"model_type":"llama","hidden_size":64,"intermediate_size":1,"num_hidden_layers":1,"num_attention_heads":4,"vocab_size":1,"rope_scaling":{"rope_type":"yarn","factor":4,"original_max_position_embeddings":8,"mscale":1}}`, "mscale"},
		{`{"model_type":"llama","hidden_size":64,"intermediate_size":1,"num_hidden_layers":1,"num_attention_heads":4,"num_key_value_heads":3,"vocab_size":1}`, "multiple of num_key_value_heads"},
		{`{"model_type":"llama","hidden_act":"gelu"}`, "hidden_act"},
		{`not json`, "parse model config.json"},
	} {
		if _, err := ParseConfig([]byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.json, err, tc.want)
		}
	}
}

// The catalog's dense and Qwen3-MoE shapes are shapes the engine runs, and
// config.json carries them through HFConfigJSON and ParseConfig unchanged;
// shapes with experts are refused under a dense family.
func TestConfigCatalogShapes(t *testing.T) {
	dense := 0
	for _, a := range models.All() {
		if a.Family != models.Llama3 && a.Family != models.Qwen3 && a.Family != models.Qwen3MoE {
			continue
		}
		dense++
		b, err := Config{Shape: a.Shape, BOSTokenID: -1}.HFConfigJSON()
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParseConfig(b)
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		if !reflect.DeepEqual(c.Shape, a.Shape) {
			t.Errorf("%s: config.json round trip:\n got %+v\nwant %+v", a.Name, c.Shape, a.Shape)
		}
	}
	if dense < 10 {
		t.Errorf("%d dense catalog models, want the tiny, Llama 3 and Qwen3 entries", dense)
	}
	moe := Config{Shape: smallConfig(models.Qwen3).Shape}
	moe.Experts, moe.ExpertsPerToken = 8, 2
	if err := moe.Validate(); err == nil || !strings.Contains(err.Error(), "num_experts must be positive for qwen3_moe, gpt_oss and deepseek_v3 and absent otherwise") {
		t.Errorf("dense family with experts: err %v, want a mixture-of-experts refusal", err)
	}
}
