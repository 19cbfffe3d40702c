package engine

import (
	"fmt"
	"strings"

	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// Model is a loaded base model, optionally with a LoRA adapter. It is
// immutable and safe for concurrent Sample calls; WithLoRA returns a new
// Model sharing the base weights and the batch its Sample calls join.
type Model struct {
	name      string
	cfg       Config
	w         *weights
	lora      *LoRA
	invFreq   []float64
	ropeScale float64 // multiplies cos and sin (YaRN)
	tok       *tokenizer.Tokenizer
	batch     *batcher // shared by every adapter of the base
}

// Load returns a built-in tiny model ("tinker-local/tiny-llama" or
// "tinker-local/tiny-qwen3") with its byte-level tokenizer.
func Load(name string) (*Model, error) {
	c, ts, err := TinyTensors(name)
	if err != nil {
		return nil, err
	}
	m, err := New(name, c, ts)
	if err != nil {
		return nil, err
	}
	if m.tok, err = tokenizer.Tiny(); err != nil {
		return nil, fmt.Errorf("model %s: %w", name, err)
	}
	return m, nil
}

// New builds a model from a config and Hugging Face-named tensors (which it
// keeps, without copying).
func New(name string, c Config, ts Tensors) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	w, err := buildWeights(c, ts)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", name, err)
	}
	return &Model{name: name, cfg: c, w: w, invFreq: ropeInvFreq(c.ropeConfig()), ropeScale: ropeAttentionScale(c), batch: &batcher{}}, nil
}

// Name is the model's name (for tiny models) or the directory it came from.
func (m *Model) Name() string { return m.name }

// Config returns the architecture.
func (m *Model) Config() Config { return m.cfg }

// Tokenizer returns the byte-level tokenizer of tiny models, or for a
// Hugging Face directory the tokenizer.json it ships; nil when there is
// none.
func (m *Model) Tokenizer() *tokenizer.Tokenizer { return m.tok }

// LoRA returns the adapter, or nil.
func (m *Model) LoRA() *LoRA { return m.lora }

// WithLoRA returns a model that applies l on top of m's base weights (any
// adapter already on m is replaced). The base weights are shared.
func (m *Model) WithLoRA(l *LoRA) *Model {
	c := *m
	c.lora = l
	return &c
}

// WithAdapter loads a PEFT adapter directory (adapter_config.json and
// adapter_model.safetensors) and returns the model with it applied.
func (m *Model) WithAdapter(dir string) (*Model, error) {
	l, err := LoadLoRA(dir, m.cfg)
	if err != nil {
		return nil, err
	}
	return m.WithLoRA(l), nil
}

// LoadLoRA reads a PEFT LoRA adapter directory (adapter_config.json and
// adapter_model.safetensors, via lib/peft) for a model with config c. The
// checkpoint_complete marker is not required, so adapters from elsewhere
// load too; the server checks completeness of its own checkpoints.
func LoadLoRA(dir string, c Config) (*LoRA, error) {
	a, err := peft.ReadDir(dir, true)
	if err != nil {
		return nil, fmt.Errorf("load LoRA adapter: %w", err)
	}
	defer a.Close()
	ac := a.Config
	switch {
	case ac.PeftType != "" && !strings.EqualFold(ac.PeftType, "LORA"):
		return nil, fmt.Errorf("load LoRA adapter %s: peft_type %q is not LORA", dir, ac.PeftType)
	case ac.UseDora:
		return nil, fmt.Errorf("load LoRA adapter %s: DoRA adapters are not supported", dir)
	case len(ac.RankPattern) > 0 || len(ac.AlphaPattern) > 0:
		return nil, fmt.Errorf("load LoRA adapter %s: per-module rank_pattern/alpha_pattern is not supported", dir)
	case ac.SavesModules():
		return nil, fmt.Errorf("load LoRA adapter %s: modules_to_save is not supported", dir)
	}
	targets := map[string]bool{}
	for _, t := range ac.TargetModules {
		targets[t] = true
	}
	ts := make(Tensors, 2*len(a.Modules))
	for mod, p := range a.Modules {
		if short := mod[strings.LastIndexByte(mod, '.')+1:]; len(targets) > 0 && !targets[short] && !targets[mod] {
			return nil, fmt.Errorf("load LoRA adapter %s: weights for %s, which target_modules %v does not list", dir, mod, ac.TargetModules)
		}
		for suffix, st := range map[string]*safetensors.Tensor{".lora_A.weight": p.A, ".lora_B.weight": p.B} {
			t, err := toTensor(st)
			if err != nil {
				return nil, fmt.Errorf("load LoRA adapter %s: %w", dir, err)
			}
			ts["base_model.model."+mod+suffix] = t
		}
	}
	l, err := NewLoRA(c, ts, ac.R, ac.LoraAlpha, ac.UseRslora)
	if err != nil {
		return nil, fmt.Errorf("load LoRA adapter %s: %w", dir, err)
	}
	return l, nil
}

func toTensor(t *safetensors.Tensor) (Tensor, error) { return toTensorIn(t, nil) }

// toTensorIn is toTensor with the values from slab (hugeSlab; nil: the
// heap, advised for huge pages on its own).
func toTensorIn(t *safetensors.Tensor, slab *hugeSlab) (Tensor, error) {
	data := hugeSlabAlloc[float32](slab, int(t.NumElements()))
	if slab == nil {
		adviseHuge(data)
	}
	if err := t.Float32Into(data); err != nil {
		return Tensor{}, err
	}
	shape := make([]int, len(t.Shape))
	for i, d := range t.Shape {
		shape[i] = int(d)
	}
	return Tensor{Shape: shape, Data: data}, nil
}
