// Package models is the table of base-model architectures the local server
// offers: enough of each model's config.json to shape LoRA adapters exactly
// (layer count, projection sizes, experts) and to answer
// get_server_capabilities. Shape is the one description of a transformer's
// shape in the project: lib/engine's Config embeds it rather than repeating
// it. It also defines two tiny byte-level models that the local sampling
// engine can really run.
//
// Numbers come from each model's Hugging Face config.json (noted per entry as
// "hf:<repo>/config.json"); max context is max_position_embeddings unless noted.
//
// The table covers the 21 models the service's get_server_capabilities listed
// in December 2025, plus Llama-3.2-1B (which the SDK's tests use), plus Kimi
// K2.5 and K2.6 from the 2026 lineup. The rest of that lineup is listed in
// lineup.go with what the catalog lacks to shape it (hybrid linear-attention
// and Mamba layers; private configs); NotInCatalog says so in one line.
package models

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/tinkershell/tinker/lib/lazy"
)

// Arch is one base model: its name, the tokenizer get_info reports, and its
// shape.
type Arch struct {
	Name string // Hugging Face repo id, as sent in base_model
	Shape
	// TokenizerID is what get_info reports (docs/protocol.md, "Models and weights").
	TokenizerID string
	// Dir is the model directory a name outside the catalog is served
	// from (--model NAME=DIR): it brings its own tokenizer and chat
	// template, so nothing is fetched from the Hub for it.
	Dir string
}

// Shape is a transformer's shape, with the fields named as in a Hugging Face
// config.json. It is the one description of a model's shape: the catalog's
// entries hold one, and the engine's Config (lib/engine) embeds one, filled
// by the engine's config.json parser for a model directory.
type Shape struct {
	Family                Family // model_type
	Layers                int    // num_hidden_layers
	Hidden                int    // hidden_size
	Intermediate          int    // intermediate_size: dense MLP width (also DeepSeek's first dense layers)
	Heads                 int    // num_attention_heads
	KVHeads               int    // num_key_value_heads
	HeadDim               int    // head_dim
	VocabSize             int
	TieWordEmbeddings     bool
	MaxPositionEmbeddings int // the context length
	Experts               int // routed experts per MoE layer; 0 for dense models
	ExpertsPerToken       int
	MoEIntermediate       int   // width of one expert's MLP
	SharedExperts         int   // DeepSeek-style always-on experts (dense MLP of SharedExperts*MoEIntermediate)
	FirstDenseLayers      int   // DeepSeek: first k layers use the dense MLP
	DecoderSparseStep     int   // Qwen3-MoE decoder_sparse_step: layer i has experts when (i+1) % step == 0; 0 means 1
	MLPOnlyLayers         []int // Qwen3-MoE mlp_only_layers: layers with the dense MLP
	MLA                   *MLA
	RMSNormEps            float64
	RopeTheta             float64
}

// MLA is DeepSeek's multi-head latent attention: the projections LoRA
// targets are q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj and o_proj.
type MLA struct {
	QLoraRank  int
	KVLoraRank int
	QKNopeDim  int
	QKRopeDim  int
	VHeadDim   int
}

// IsMoELayer reports whether layer i has routed experts (the other layers
// have a dense MLP of width Intermediate).
func (s *Shape) IsMoELayer(i int) bool {
	if s.Experts == 0 || i < s.FirstDenseLayers || slices.Contains(s.MLPOnlyLayers, i) {
		return false
	}
	return s.DecoderSparseStep <= 1 || (i+1)%s.DecoderSparseStep == 0
}

// Tiny models: small enough to run on a CPU in tests, with a byte-level
// vocabulary (tokenizer.Tiny): token i is byte i for i < 256, then the
// special tokens of TinySpecials.
const (
	tinyPrefix = "tinker-local/"
	TinyLlama  = tinyPrefix + "tiny-llama"
	TinyQwen3  = tinyPrefix + "tiny-qwen3"
	// TinyQwen3MoE is a Qwen3-MoE: 8 experts of width 64, 2 per token.
	TinyQwen3MoE = tinyPrefix + "tiny-qwen3-moe"
	// TinyGptOss is a GPT-OSS: 8 experts of width 64, 2 per token, sliding
	// and full attention alternating.
	TinyGptOss = tinyPrefix + "tiny-gpt-oss"
	// TinyDeepSeek is a DeepSeek-V3: latent attention, one dense layer,
	// then 12 routed experts in 3 groups (2 kept), 3 per token, and a
	// shared expert; lm_head untied, as in the released models.
	TinyDeepSeek = tinyPrefix + "tiny-deepseek"
)

// Special token ids of the tiny models' vocabulary.
const (
	TinyBOS = 256 + iota
	TinyEOS
	TinyPAD
	TinyUNK
	// TinyVocab is 256 byte tokens + 4 special tokens.
	TinyVocab
)

// TinySpecials names the tiny vocabulary's special tokens, in id order from
// TinyBOS.
var TinySpecials = [...]string{"<bos>", "<eos>", "<pad>", "<unk>"}

// table is the catalog, made on first use: its rows are built by calls
// (qwen3MoE, deepseek, ...), which at package level would run at every start.
var table = lazy.Value[[]Arch]{New: func() []Arch {
	return []Arch{
		{Name: TinyLlama, TokenizerID: TinyLlama, Shape: Shape{Family: Llama3, Layers: 2, Hidden: 64, Intermediate: 192,
			Heads: 4, KVHeads: 2, HeadDim: 16, VocabSize: TinyVocab, TieWordEmbeddings: true, MaxPositionEmbeddings: 2048,
			RMSNormEps: 1e-5, RopeTheta: 10000}},
		{Name: TinyQwen3, TokenizerID: TinyQwen3, Shape: Shape{Family: Qwen3, Layers: 4, Hidden: 128, Intermediate: 384,
			Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: TinyVocab, TieWordEmbeddings: true, MaxPositionEmbeddings: 4096,
			RMSNormEps: 1e-6, RopeTheta: 1000000}},
		{Name: TinyQwen3MoE, TokenizerID: TinyQwen3MoE, Shape: Shape{Family: Qwen3MoE, Layers: 4, Hidden: 128,
			Intermediate: 384, Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: TinyVocab, TieWordEmbeddings: true,
			MaxPositionEmbeddings: 4096, Experts: 8, ExpertsPerToken: 2, MoEIntermediate: 64, RMSNormEps: 1e-6,
			RopeTheta: 1000000}},
		{Name: TinyGptOss, TokenizerID: TinyGptOss, Shape: Shape{Family: GptOss, Layers: 4, Hidden: 128, Intermediate: 64, TieWordEmbeddings: true,
			Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: TinyVocab, MaxPositionEmbeddings: 4096, Experts: 8,
			ExpertsPerToken: 2, MoEIntermediate: 64, RMSNormEps: 1e-5, RopeTheta: 150000}},
		{Name: TinyDeepSeek, TokenizerID: TinyDeepSeek, Shape: Shape{Family: DeepSeekV3, Layers: 3, Hidden: 64, Intermediate: 128,
			Heads: 4, KVHeads: 4, HeadDim: 24, VocabSize: TinyVocab, MaxPositionEmbeddings: 4096,
			Experts: 12, ExpertsPerToken: 3, MoEIntermediate: 32, SharedExperts: 1, FirstDenseLayers: 1,
			MLA:        &MLA{QLoraRank: 48, KVLoraRank: 32, QKNopeDim: 16, QKRopeDim: 8, VHeadDim: 16},
			RMSNormEps: 1e-6, RopeTheta: 10000}},

		// Llama 3 family. hf:meta-llama/<name>/config.json.
		llama("meta-llama/Llama-3.2-1B", 16, 2048, 8192, 32, 8, 64, true),
		llama("meta-llama/Llama-3.2-3B", 28, 3072, 8192, 24, 8, 128, true),
		llama("meta-llama/Llama-3.1-8B", 32, 4096, 14336, 32, 8, 128, false),
		llama("meta-llama/Llama-3.1-8B-Instruct", 32, 4096, 14336, 32, 8, 128, false),
		llama("meta-llama/Llama-3.1-70B", 80, 8192, 28672, 64, 8, 128, false),
		llama("meta-llama/Llama-3.3-70B-Instruct", 80, 8192, 28672, 64, 8, 128, false),

		// Qwen3 dense. hf:Qwen/<name>/config.json (max_position_embeddings 40960;
		// the -Base repos say 32768; the 2507 refresh says 262144).
		qwen3("Qwen/Qwen3-8B", 36, 4096, 12288, 32, 8, false, 40960),
		qwen3("Qwen/Qwen3-8B-Base", 36, 4096, 12288, 32, 8, false, 32768),
		qwen3("Qwen/Qwen3-32B", 64, 5120, 25600, 64, 8, false, 40960),
		qwen3("Qwen/Qwen3-4B-Instruct-2507", 36, 2560, 9728, 32, 8, true, 262144),

		// Qwen3 MoE. hf:Qwen/<name>/config.json: moe_intermediate_size,
		// num_experts, num_experts_per_tok; the VL models' text_config matches
		// the text-only models of the same size.
		qwen3MoE("Qwen/Qwen3-30B-A3B", 48, 2048, 6144, 32, 4, 128, 8, 768, 40960),
		qwen3MoE("Qwen/Qwen3-30B-A3B-Base", 48, 2048, 6144, 32, 4, 128, 8, 768, 32768),
		qwen3MoE("Qwen/Qwen3-30B-A3B-Instruct-2507", 48, 2048, 6144, 32, 4, 128, 8, 768, 262144),
		qwen3MoE("Qwen/Qwen3-235B-A22B-Instruct-2507", 94, 4096, 12288, 64, 4, 128, 8, 1536, 262144),
		qwen3MoE("Qwen/Qwen3-VL-30B-A3B-Instruct", 48, 2048, 6144, 32, 4, 128, 8, 768, 262144),
		qwen3MoE("Qwen/Qwen3-VL-235B-A22B-Instruct", 94, 4096, 12288, 64, 4, 128, 8, 1536, 262144),

		// DeepSeek-V3 architecture. hf:deepseek-ai/DeepSeek-V3.1/config.json and
		// hf:moonshotai/Kimi-K2-Thinking/config.json (Kimi K2 reuses DeepseekV3
		// with 384 experts, 64 heads, a 160k vocab and one first dense layer,
		// first_k_dense_replace 1, where DeepSeek has 3).
		deepseek("deepseek-ai/DeepSeek-V3.1", 128, 256, 129280, 163840, 3),
		deepseek("deepseek-ai/DeepSeek-V3.1-Base", 128, 256, 129280, 163840, 3),
		deepseek("moonshotai/Kimi-K2-Thinking", 64, 384, 163840, 262144, 1),
		// Kimi K2.5 and K2.6 wrap the same DeepseekV3 text model in a vision
		// model (hf:moonshotai/Kimi-K2.5/config.json, text_config; K2.6 the
		// same): the catalog shapes the text model, which is what LoRA adapts.
		// tinker-cookbook's hyperparam_utils.py gives all three Kimi models the
		// same hidden size and LoRA parameter counts (TestLoRACountsMatchCookbook).
		deepseek("moonshotai/Kimi-K2.5", 64, 384, 163840, 262144, 1),
		deepseek("moonshotai/Kimi-K2.6", 64, 384, 163840, 262144, 1),

		// gpt-oss. hf:openai/<name>/config.json (intermediate_size 2880 is the
		// per-expert width; head_dim 64; 64 query heads, 8 KV heads).
		gptOSS("openai/gpt-oss-20b", 24, 32),
		gptOSS("openai/gpt-oss-120b", 36, 128),
	}
}}

func llama(name string, layers, hidden, inter, heads, kv, headDim int, tied bool) Arch {
	return Arch{Name: name, TokenizerID: "thinkingmachineslabinc/meta-llama-3-tokenizer", Shape: Shape{Family: Llama3,
		Layers: layers, Hidden: hidden, Intermediate: inter, Heads: heads, KVHeads: kv, HeadDim: headDim,
		VocabSize: 128256, TieWordEmbeddings: tied, MaxPositionEmbeddings: 131072, RMSNormEps: 1e-5, RopeTheta: 500000}}
}

func qwen3(name string, layers, hidden, inter, heads, kv int, tied bool, ctx int) Arch {
	return Arch{Name: name, TokenizerID: name, Shape: Shape{Family: Qwen3, Layers: layers, Hidden: hidden,
		Intermediate: inter, Heads: heads, KVHeads: kv, HeadDim: 128, VocabSize: 151936, TieWordEmbeddings: tied,
		MaxPositionEmbeddings: ctx, RMSNormEps: 1e-6, RopeTheta: 1000000}}
}

func qwen3MoE(name string, layers, hidden, inter, heads, kv, experts, perTok, moeInter, ctx int) Arch {
	a := qwen3(name, layers, hidden, inter, heads, kv, false, ctx)
	a.Family = Qwen3MoE
	a.Experts, a.ExpertsPerToken, a.MoEIntermediate = experts, perTok, moeInter
	return a
}

func deepseek(name string, heads, experts, vocab, ctx, firstDense int) Arch {
	return Arch{Name: name, TokenizerID: name, Shape: Shape{Family: DeepSeekV3, Layers: 61, Hidden: 7168,
		Intermediate: 18432, Heads: heads, KVHeads: heads, HeadDim: 192, VocabSize: vocab, MaxPositionEmbeddings: ctx,
		Experts: experts, ExpertsPerToken: 8, MoEIntermediate: 2048, SharedExperts: 1, FirstDenseLayers: firstDense,
		MLA:        &MLA{QLoraRank: 1536, KVLoraRank: 512, QKNopeDim: 128, QKRopeDim: 64, VHeadDim: 128},
		RMSNormEps: 1e-6, RopeTheta: 10000}}
}

func gptOSS(name string, layers, experts int) Arch {
	return Arch{Name: name, TokenizerID: name, Shape: Shape{Family: GptOss, Layers: layers, Hidden: 2880,
		Intermediate: 2880, Heads: 64, KVHeads: 8, HeadDim: 64, VocabSize: 201088, MaxPositionEmbeddings: 131072,
		Experts: experts, ExpertsPerToken: 4, MoEIntermediate: 2880, RMSNormEps: 1e-5, RopeTheta: 150000}}
}

var (
	regMu sync.RWMutex
	// byName indexes the table by lower-cased name, made on first use (not
	// at every start); Register adds to it under regMu.
	byName = lazy.Value[map[string]*Arch]{New: func() map[string]*Arch {
		archs := table.Get()
		m := make(map[string]*Arch, len(archs))
		for i := range archs {
			m[strings.ToLower(archs[i].Name)] = &archs[i]
		}
		return m
	}}
	registered []*Arch // by Register, in order
)

// Lookup finds a model by repo id (case-insensitive; a ":suffix" is ignored,
// as the SDK does for tokenizer selection).
func Lookup(name string) (*Arch, bool) {
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	regMu.RLock()
	defer regMu.RUnlock()
	a, ok := byName.Get()[strings.ToLower(name)]
	return a, ok
}

// Register adds a model outside the table, e.g. a local Hugging Face
// directory served under its own name (tinker serve --model NAME=DIR). A
// name already known is an error unless it was registered with the same
// shape before.
func Register(a Arch) error {
	if a.Name == "" || strings.ContainsAny(a.Name, ": ") {
		return fmt.Errorf("model name %q: want a non-empty name without spaces or ':'", a.Name)
	}
	regMu.Lock()
	defer regMu.Unlock()
	if old, ok := byName.Get()[strings.ToLower(a.Name)]; ok {
		if slices.Contains(registered, old) && reflect.DeepEqual(*old, a) {
			return nil
		}
		return fmt.Errorf("model %s is already defined with another shape", a.Name)
	}
	p := &a
	byName.Get()[strings.ToLower(a.Name)] = p
	registered = append(registered, p)
	return nil
}

// All returns every model, tiny models first (in the table's order, so
// tiny-llama stays first), then by name (registered ones included).
func All() []*Arch {
	archs := table.Get()
	out := make([]*Arch, 0, len(archs))
	for i := range archs {
		out = append(out, &archs[i])
	}
	regMu.RLock()
	out = append(out, registered...)
	regMu.RUnlock()
	sort.SliceStable(out, func(i, j int) bool {
		ti, tj := IsTiny(out[i].Name), IsTiny(out[j].Name)
		if ti != tj {
			return ti
		}
		return !ti && out[i].Name < out[j].Name // stable: tiny ones keep their order
	})
	return out
}

// Names lists all model names in All order.
func Names() []string {
	var out []string
	for _, a := range All() {
		out = append(out, a.Name)
	}
	return out
}
