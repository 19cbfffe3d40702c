package peft

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/userfile"
)

// Pair is one adapted module's LoRA matrices: the update to the module's
// weight W [out, in] is Scale * B @ A. For MoE expert stacks both tensors
// have a leading experts dimension.
type Pair struct {
	A, B *safetensors.Tensor
}

// Adapter is a LoRA adapter loaded from a checkpoint directory.
type Adapter struct {
	Config AdapterConfig
	// Modules maps the module path without the PEFT prefix, e.g.
	// "model.layers.0.self_attn.q_proj" or "lm_head", to its matrices.
	Modules map[string]Pair
	file    *safetensors.File
}

// Scale is lora_alpha / r (rsLoRA: alpha / sqrt(r)).
func (a *Adapter) Scale() float32 {
	if a.Config.UseRslora {
		return float32(float64(a.Config.LoraAlpha) / math.Sqrt(float64(a.Config.R)))
	}
	return float32(a.Config.LoraAlpha / float64(a.Config.R))
}

// Close releases the weights file mapping.
func (a *Adapter) Close() error { return a.file.Close() }

// ReadDir loads an adapter directory (adapter_config.json and
// adapter_model.safetensors). It requires the checkpoint_complete marker
// unless allowIncomplete is set.
func ReadDir(dir string, allowIncomplete bool) (*Adapter, error) {
	if !allowIncomplete {
		if _, err := os.Stat(filepath.Join(dir, CompleteFile)); err != nil {
			return nil, fmt.Errorf("checkpoint %s is incomplete (no %s marker)", dir, CompleteFile)
		}
	}
	cb, err := userfile.ReadFile(filepath.Join(dir, ConfigFile), MaxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("read adapter config: %w", err)
	}
	var cfg AdapterConfig
	if err := json.Unmarshal(cb, &cfg); err != nil {
		return nil, fmt.Errorf("parse %s: %w", ConfigFile, err)
	}
	if cfg.R <= 0 || cfg.R > MaxRank {
		return nil, fmt.Errorf("%s: rank r must be between 1 and %d, got %d", ConfigFile, MaxRank, cfg.R)
	}
	f, err := safetensors.Open(filepath.Join(dir, WeightsFile))
	if err != nil {
		return nil, fmt.Errorf("read adapter weights: %w", err)
	}
	a := &Adapter{Config: cfg, Modules: map[string]Pair{}, file: f}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		name := strings.TrimPrefix(t.Name, "base_model.model.")
		var mod string
		var isA bool
		switch {
		case strings.HasSuffix(name, ".lora_A.weight"):
			mod, isA = strings.TrimSuffix(name, ".lora_A.weight"), true
		case strings.HasSuffix(name, ".lora_B.weight"):
			mod = strings.TrimSuffix(name, ".lora_B.weight")
		default:
			continue // e.g. modules_to_save weights; not LoRA
		}
		p := a.Modules[mod]
		if isA {
			p.A = t
		} else {
			p.B = t
		}
		a.Modules[mod] = p
	}
	for mod, p := range a.Modules {
		if p.A == nil || p.B == nil {
			f.Close()
			return nil, fmt.Errorf("%s: module %s has only one of lora_A/lora_B", WeightsFile, mod)
		}
		ra, rb := p.A.Shape[len(p.A.Shape)-2], p.B.Shape[len(p.B.Shape)-1]
		if len(p.A.Shape) != len(p.B.Shape) || ra != int64(cfg.R) || rb != int64(cfg.R) {
			f.Close()
			return nil, fmt.Errorf("%s: module %s has shapes %v and %v, inconsistent with r=%d", WeightsFile, mod, p.A.Shape, p.B.Shape, cfg.R)
		}
	}
	return a, nil
}
