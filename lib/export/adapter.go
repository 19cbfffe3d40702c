package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/lazyre"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/userfile"
)

// Module is one adapted linear map under its Hugging Face module path
// ("model.layers.3.mlp.up_proj", "lm_head"): the update to its weight
// W [out, in] is Scale·B·A with A [r, in] and B [out, r].
type Module struct {
	Path string
	A, B *safetensors.Tensor
}

// Adapter is a LoRA adapter read from a directory: the local server's
// checkpoints, the service's archives and PEFT's own layout all qualify.
type Adapter struct {
	Dir     string
	Config  peft.AdapterConfig
	Scale   float32  // lora_alpha / r (rsLoRA: lora_alpha / √r)
	Modules []Module // sorted by Path
	file    *safetensors.File
	params  *paramPlan // target_parameters adapters (peft_params_read.go)
}

// Close releases the mapped weights file.
func (a *Adapter) Close() error { return a.file.Close() }

// loraKey matches an adapter tensor name: PEFT's prefix, the module path,
// the half, and optionally PEFT's adapter name ("default").
var loraKey = lazyre.New(`^base_model\.model\.(.+)\.lora_([AB])(?:\.default)?\.weight$`)

// denseModule matches the module paths a dense Llama 3 or Qwen3 model has.
var denseModule = lazyre.New(`^(?:model\.layers\.(\d+)\.(?:self_attn\.[qkvo]_proj|mlp\.(?:gate|up|down)_proj)|lm_head)$`)

// moeModule matches the expert modules of mixture-of-experts adapters.
var moeModule = lazyre.New(`\.(?:experts|shared_experts)(?:\.|$)|\.w[123]$`)

// serviceAttn is GPT-OSS's attention as the service names it (.attn).
var serviceAttn = lazyre.New(`^(model\.layers\.\d+)\.attn\.`)

// hfPath maps the service's names for the unembedding and for GPT-OSS's
// attention (model.layers.N.attn.q_proj) to the Hugging Face ones; other
// paths are already Hugging Face's.
func hfPath(p string) string {
	if p == "model.unembed_tokens" || p == "unembed_tokens" {
		return "lm_head"
	}
	return serviceAttn.ReplaceAllString(p, "${1}.self_attn.")
}

// ReadAdapter opens the adapter in dir: adapter_config.json and
// adapter_model.safetensors. Every tensor must be a LoRA half of a dense
// module; anything else is refused, so nothing is silently dropped.
func ReadAdapter(dir string) (*Adapter, error) {
	return readAdapter(dir, (*Adapter).collect)
}

// readAdapter reads the config and weights in dir and makes the modules
// with collect.
func readAdapter(dir string, collect func(*Adapter) error) (*Adapter, error) {
	cfg, err := readAdapterConfig(dir)
	if err != nil {
		return nil, err
	}
	f, err := openAdapterWeights(dir)
	if err != nil {
		return nil, err
	}
	a := &Adapter{Dir: dir, Config: cfg, Scale: scaleOf(cfg), file: f}
	if a.params, err = checkParamConfig(cfg); err == nil {
		err = collect(a)
	}
	if err == nil {
		err = a.checkFinite()
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return a, nil
}

// checkFinite refuses NaN and infinite weights, which would otherwise be
// merged silently or fail much later, blamed on something else. The
// modules are checked on every core (nothing else runs yet); the error
// names the first bad one in order.
func (a *Adapter) checkFinite() error {
	var mu sync.Mutex
	first, msg := len(a.Modules), ""
	parallelSpans(len(a.Modules), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if m := nonFinite(a.Modules[i]); m != "" {
				mu.Lock()
				if i < first {
					first, msg = i, m
				}
				mu.Unlock()
				return
			}
		}
	})
	if msg != "" {
		return errors.New(msg)
	}
	return nil
}

// nonFinite says which factor of m holds a NaN or infinity, if one does.
func nonFinite(m Module) string {
	for _, t := range []*safetensors.Tensor{m.A, m.B} {
		if i := t.NonFinite(); i >= 0 {
			return fmt.Sprintf("%s: tensor %s holds a NaN or infinite value (element %d): the adapter is corrupt; re-download or re-train it",
				peft.WeightsFile, t.Name, i)
		}
	}
	return ""
}

func readAdapterConfig(dir string) (peft.AdapterConfig, error) {
	var cfg peft.AdapterConfig
	b, err := userfile.ReadFile(filepath.Join(dir, peft.ConfigFile), maxConfigBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return cfg, fmt.Errorf("%s is not an adapter directory (no %s)", dir, peft.ConfigFile)
		}
		return cfg, fmt.Errorf("read adapter config: %w", err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return cfg, fmt.Errorf("parse %s: %w", filepath.Join(dir, peft.ConfigFile), err)
	}
	switch {
	case cfg.R <= 0 || cfg.R > peft.MaxRank:
		return cfg, fmt.Errorf("%s: rank r must be between 1 and %d, got %d", peft.ConfigFile, peft.MaxRank, cfg.R)
	case cfg.PeftType != "" && !strings.EqualFold(cfg.PeftType, "LORA"):
		return cfg, fmt.Errorf("%s: peft_type %q is not LORA", peft.ConfigFile, cfg.PeftType)
	case cfg.UseDora:
		return cfg, fmt.Errorf("%s: DoRA adapters cannot be exported", peft.ConfigFile)
	case cfg.SavesModules():
		return cfg, fmt.Errorf("%s: modules_to_save cannot be exported", peft.ConfigFile)
	}
	return cfg, nil
}

func openAdapterWeights(dir string) (*safetensors.File, error) {
	path := filepath.Join(dir, peft.WeightsFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, "adapter_model.bin")); err == nil {
			return nil, fmt.Errorf("%s holds adapter_model.bin (a PyTorch pickle), which is not read: convert it to %s", dir, peft.WeightsFile)
		}
		return nil, fmt.Errorf("%s has no %s", dir, peft.WeightsFile)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read adapter weights: %w", err)
	}
	return f, nil
}

func scaleOf(c peft.AdapterConfig) float32 {
	if c.UseRslora {
		return float32(float64(c.LoraAlpha) / math.Sqrt(float64(c.R)))
	}
	return float32(float64(c.LoraAlpha) / float64(c.R))
}

// collect pairs the tensors into modules, refusing unknown keys.
func (a *Adapter) collect() error {
	byPath := map[string]*Module{}
	for i := range a.file.Tensors {
		t := &a.file.Tensors[i]
		m := loraKey.FindStringSubmatch(t.Name)
		if m == nil {
			return fmt.Errorf("%s: unknown key %s (only base_model.model.<module>.lora_A/lora_B.weight)", peft.WeightsFile, t.Name)
		}
		path := hfPath(m[1])
		if a.params != nil && fusedParamModule.MatchString(path) {
			if err := addHalf(byPath, path, m[2], t); err != nil {
				return err
			}
			continue
		}
		if moeModule.MatchString(path) && !isExpertPath(path) {
			return fmt.Errorf("%s: %s is a mixture-of-experts module of a kind that cannot be exported (only Qwen3-MoE's experts)", peft.WeightsFile, t.Name)
		}
		if !denseModule.MatchString(path) && !isExpertPath(path) {
			return fmt.Errorf("%s: unknown key %s (module %s is not a q/k/v/o, gate/up/down or unembedding projection)", peft.WeightsFile, t.Name, path)
		}
		if err := addHalf(byPath, path, m[2], t); err != nil {
			return err
		}
	}
	return a.pair(byPath)
}

// addHalf files t as lora_A or lora_B (half) of the module at path.
func addHalf(byPath map[string]*Module, path, half string, t *safetensors.Tensor) error {
	if !isFloat(t.DType) {
		return fmt.Errorf("%s: tensor %s has dtype %s, want F32, BF16 or F16", peft.WeightsFile, t.Name, t.DType)
	}
	mod := byPath[path]
	if mod == nil {
		mod = &Module{Path: path}
		byPath[path] = mod
	}
	p := &mod.A
	if half == "B" {
		p = &mod.B
	}
	if *p != nil {
		return fmt.Errorf("%s: module %s has two lora_%s tensors", peft.WeightsFile, path, half)
	}
	*p = t
	return nil
}

func (a *Adapter) pair(byPath map[string]*Module) error {
	if len(byPath) == 0 {
		return fmt.Errorf("%s holds no LoRA tensors", filepath.Join(a.Dir, peft.WeightsFile))
	}
	r := int64(a.Config.R)
	if a.params != nil {
		if err := a.params.unfuse(byPath, a.Config.R, a.Scale); err != nil {
			return err
		}
	}
	if err := expandExperts(byPath, r); err != nil {
		return err
	}
	for path, m := range byPath {
		if m.A == nil || m.B == nil {
			return fmt.Errorf("%s: module %s has only one of lora_A and lora_B", peft.WeightsFile, path)
		}
		if len(m.A.Shape) != 2 || len(m.B.Shape) != 2 || m.A.Shape[0] != r || m.B.Shape[1] != r || m.A.Shape[1] < 1 || m.B.Shape[0] < 1 {
			return fmt.Errorf("%s: module %s has lora_A %v and lora_B %v, inconsistent with r=%d", peft.WeightsFile, path, m.A.Shape, m.B.Shape, r)
		}
		a.Modules = append(a.Modules, *m)
	}
	sort.Slice(a.Modules, func(i, j int) bool { return moduleLess(a.Modules[i].Path, a.Modules[j].Path) })
	return nil
}

// moduleLess orders modules by layer number, then name; lm_head last.
func moduleLess(x, y string) bool {
	lx, ly := layerOf(x), layerOf(y)
	if lx != ly {
		return lx < ly
	}
	return x < y
}

func layerOf(path string) int {
	m := layerPrefix.FindStringSubmatch(path)
	if m == nil {
		return math.MaxInt
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func isFloat(d safetensors.DType) bool {
	return d == safetensors.F32 || d == safetensors.BF16 || d == safetensors.F16
}

// Targets lists the adapted modules' short names (q_proj, lm_head, …) in
// PEFT's usual order.
func (a *Adapter) Targets() []string {
	have := map[string]bool{}
	for _, m := range a.Modules {
		have[m.Path[strings.LastIndexByte(m.Path, '.')+1:]] = true
	}
	var out []string
	for _, n := range []string{"q_proj", "k_proj", "v_proj", "o_proj", "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj",
		"gate_proj", "up_proj", "down_proj", "lm_head"} {
		if have[n] {
			out = append(out, n)
		}
	}
	return out
}

// Has reports whether the adapter adapts the module at path.
func (a *Adapter) Has(path string) bool {
	for _, m := range a.Modules {
		if m.Path == path {
			return true
		}
	}
	return false
}

// Check verifies that every module exists in a model of config c with the
// shapes the adapter's halves imply.
func (a *Adapter) Check(c engine.Config) error {
	shapes := engine.ExpectedShapes(c)
	for _, m := range a.Modules {
		name := m.Path + ".weight"
		want, ok := shapes[name]
		if m.Path == "lm_head" {
			want, ok = []int{c.VocabSize, c.Hidden}, true
		}
		if !ok {
			return fmt.Errorf("adapter module %s does not exist in the base model (%d layers)", m.Path, c.Layers)
		}
		if int(m.B.Shape[0]) != want[0] || int(m.A.Shape[1]) != want[1] {
			return fmt.Errorf("adapter module %s updates a [%d %d] matrix, the base model's %s is %v",
				m.Path, m.B.Shape[0], m.A.Shape[1], name, want)
		}
	}
	return nil
}
