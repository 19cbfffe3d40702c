// Package peft writes and reads LoRA adapters in the Hugging Face PEFT layout
// that Tinker checkpoint archives contain: adapter_config.json,
// adapter_model.safetensors and an empty checkpoint_complete marker.
//
// Tensor naming. Keys are PEFT's, so the adapter loads with
// peft.PeftModel.from_pretrained on the base model:
//
//	base_model.model.model.layers.{i}.self_attn.{q,k,v,o}_proj.lora_{A,B}.weight
//	base_model.model.model.layers.{i}.mlp.{gate,up,down}_proj.lora_{A,B}.weight
//	base_model.model.lm_head.lora_{A,B}.weight                      (train_unembed)
//
// The service's own archives name the output layer "unembed_tokens"; we
// deliberately write "lm_head", the module name in
// transformers, because that is what PEFT and every HF tool expect.
// MoE layers carry 3-D expert tensors named after the Mixtral convention
// (w1 = gate, w3 = up, w2 = down, shape [experts, ...]):
//
//	base_model.model.model.layers.{i}.mlp.experts.w{1,2,3}.lora_{A,B}.weight
//
// plus mlp.shared_experts.{gate,up,down}_proj for DeepSeek-style shared
// experts. The shapes are the service's: the experts' factor on the hidden
// side is shared by all experts (lora_A [1, r, hidden] of w1/w3, lora_B
// [1, hidden, r] of w2), the other is per expert; for the DeepSeek-V3
// family (DeepSeek V3.1, Kimi K2) latent attention adapts q_a_proj,
// kv_a_proj_with_mqa and o_proj.
//
// lora_A is [r, in] initialised Kaiming-uniform (PyTorch's a=sqrt(5), i.e.
// U(-1/sqrt(in), 1/sqrt(in))) from a PRNG seeded by Config.Seed and the
// tensor name; lora_B is [out, r] zero, as in PEFT's default init.
package peft

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// File names inside a checkpoint directory / archive.
const (
	ConfigFile   = "adapter_config.json"
	WeightsFile  = "adapter_model.safetensors"
	CompleteFile = "checkpoint_complete"
)

// DefaultAlpha is the lora_alpha written for every adapter: Tinker uses a
// fixed alpha of 32 independent of rank.
const DefaultAlpha = 32

// Bounds on what an adapter directory may claim, checked before anything
// is allocated from it (docs/bounds.md).
const (
	// MaxRank bounds r: far above any LoRA rank in use, far below a size
	// that overflows the products of shapes.
	MaxRank = 1 << 16
	// MaxConfigBytes bounds adapter_config.json and a model's config.json.
	MaxConfigBytes = 16 << 20
)

// Config is what shapes an adapter.
type Config struct {
	BaseModel    string
	Rank         int
	Alpha        int // 0 means DefaultAlpha
	TrainAttn    bool
	TrainMLP     bool
	TrainUnembed bool
	DType        safetensors.DType // F32 or BF16; "" means BF16
	Seed         uint64
}

func (c Config) alpha() int {
	if c.Alpha == 0 {
		return DefaultAlpha
	}
	return c.Alpha
}

func (c Config) dtype() safetensors.DType {
	if c.DType == "" {
		return safetensors.BF16
	}
	return c.DType
}

// AdapterConfig is adapter_config.json (PEFT LoraConfig fields, in PEFT's order).
type AdapterConfig struct {
	AlphaPattern        map[string]int `json:"alpha_pattern"`
	AutoMapping         any            `json:"auto_mapping"`
	BaseModelNameOrPath string         `json:"base_model_name_or_path"`
	Bias                string         `json:"bias"`
	FanInFanOut         bool           `json:"fan_in_fan_out"`
	InferenceMode       bool           `json:"inference_mode"`
	InitLoraWeights     bool           `json:"init_lora_weights"`
	LayersPattern       any            `json:"layers_pattern"`
	LayersToTransform   any            `json:"layers_to_transform"`
	LoraAlpha           float64        `json:"lora_alpha"`
	LoraDropout         float64        `json:"lora_dropout"`
	ModulesToSave       any            `json:"modules_to_save"`
	PeftType            string         `json:"peft_type"`
	R                   int            `json:"r"`
	RankPattern         map[string]int `json:"rank_pattern"`
	Revision            any            `json:"revision"`
	TargetModules       []string       `json:"target_modules"`
	// TargetParameters names nn.Parameters adapted directly (PEFT's
	// target_parameters: fused experts, [r·E, in] and [out, r·E] factors).
	TargetParameters []string `json:"target_parameters,omitempty"`
	TaskType         string   `json:"task_type"`
	UseDora          bool     `json:"use_dora"`
	UseRslora        bool     `json:"use_rslora"`
	// TargetRegex is target_modules given as one string, which PEFT
	// matches against each module's full path; TargetModules is then nil
	// and the weights file says which modules are adapted.
	TargetRegex string `json:"-"`
}

// UnmarshalJSON reads adapter_config.json, accepting target_modules as a
// list or (PEFT's other form) one regular expression.
func (c *AdapterConfig) UnmarshalJSON(b []byte) error {
	type plain AdapterConfig
	var aux struct {
		*plain
		TargetModules json.RawMessage `json:"target_modules"`
	}
	aux.plain = (*plain)(c)
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	raw := aux.TargetModules
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, &c.TargetRegex); err == nil {
		return nil
	}
	if err := json.Unmarshal(raw, &c.TargetModules); err != nil {
		return fmt.Errorf("target_modules: want a list of module names or one regular expression: %w", err)
	}
	return nil
}

// SavesModules reports whether modules_to_save names any module (it is
// null or an empty list in adapters that are LoRA matrices only).
func (c AdapterConfig) SavesModules() bool {
	switch x := c.ModulesToSave.(type) {
	case nil:
		return false
	case []any:
		return len(x) > 0
	}
	return true
}

// module is one LoRA-adapted linear map; experts > 0 makes it a stacked
// [experts, ...] tensor pair, whose hidden-side factor may be shared
// ([1, ...]) by all experts (sharedA or sharedB).
type module struct {
	path    string // e.g. "model.layers.0.self_attn.q_proj"
	in, out int
	experts int
	sharedA bool // lora_A is [1, r, in]
	sharedB bool // lora_B is [1, out, r]
}

func modules(a *models.Arch, c Config) ([]module, []string) {
	var ms []module
	targets := map[string]bool{}
	add := func(path string, in, out, experts int) {
		ms = append(ms, module{path: path, in: in, out: out, experts: experts})
		targets[path[strings.LastIndexByte(path, '.')+1:]] = true
	}
	h := a.Hidden
	for i := 0; i < a.Layers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		if c.TrainAttn {
			if m := a.MLA; m != nil {
				// The service adapts the projections to and from the
				// residual stream only, not q_b_proj and kv_b_proj.
				if m.QLoraRank > 0 {
					add(p+"self_attn.q_a_proj", h, m.QLoraRank, 0)
				} else { // no query bottleneck (q_lora_rank null)
					add(p+"self_attn.q_proj", h, a.Heads*a.HeadDim, 0)
				}
				add(p+"self_attn.kv_a_proj_with_mqa", h, m.KVLoraRank+m.QKRopeDim, 0)
				add(p+"self_attn.o_proj", a.Heads*m.VHeadDim, h, 0)
			} else {
				add(p+"self_attn.q_proj", h, a.Heads*a.HeadDim, 0)
				add(p+"self_attn.k_proj", h, a.KVHeads*a.HeadDim, 0)
				add(p+"self_attn.v_proj", h, a.KVHeads*a.HeadDim, 0)
				add(p+"self_attn.o_proj", a.Heads*a.HeadDim, h, 0)
			}
		}
		if c.TrainMLP {
			if a.IsMoELayer(i) {
				e, w := a.Experts, a.MoEIntermediate
				add(p+"mlp.experts.w1", h, w, e)
				add(p+"mlp.experts.w2", w, h, e)
				add(p+"mlp.experts.w3", h, w, e)
				shareHiddenSide(ms[len(ms)-3:])
				if a.SharedExperts > 0 {
					sw := a.SharedExperts * a.MoEIntermediate
					add(p+"mlp.shared_experts.gate_proj", h, sw, 0)
					add(p+"mlp.shared_experts.up_proj", h, sw, 0)
					add(p+"mlp.shared_experts.down_proj", sw, h, 0)
				}
			} else {
				add(p+"mlp.gate_proj", h, a.Intermediate, 0)
				add(p+"mlp.up_proj", h, a.Intermediate, 0)
				add(p+"mlp.down_proj", a.Intermediate, h, 0)
			}
		}
	}
	if c.TrainUnembed {
		add("lm_head", h, a.VocabSize, 0)
	}
	var names []string
	for _, n := range []string{"q_proj", "k_proj", "v_proj", "o_proj", "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa",
		"kv_b_proj", "gate_proj", "up_proj", "down_proj", "w1", "w2", "w3", "lm_head"} {
		if targets[n] {
			names = append(names, n)
		}
	}
	return ms, names
}

// shareHiddenSide gives w1, w2, w3 (in that order) the service's
// "shared-outer" shapes: the factor on the hidden side is one matrix for
// all experts (w1's and w3's lora_A, w2's lora_B), the other per expert.
// Every MoE family is shaped so (the cookbook's parameter counts prove it
// for Qwen3-MoE and GPT-OSS as for DeepSeek V3 and Kimi K2), and the local
// engine trains that form.
func shareHiddenSide(w []module) {
	w[0].sharedA, w[1].sharedB, w[2].sharedA = true, true, true
}

// Plan is a fully determined adapter: its config file bytes and the exact
// layout of its safetensors file. Building a Plan writes nothing, so sizes
// are known up front.
type Plan struct {
	Config     Config
	ConfigJSON []byte
	Layout     *safetensors.Layout
	mods       map[string]module // tensor key -> module
}

// NewPlan shapes an adapter for cfg.BaseModel.
func NewPlan(cfg Config) (*Plan, error) {
	arch, ok := models.Lookup(cfg.BaseModel)
	if !ok {
		return nil, fmt.Errorf("unknown base model %q", cfg.BaseModel)
	}
	if cfg.Rank <= 0 {
		return nil, fmt.Errorf("LoRA rank must be positive, got %d", cfg.Rank)
	}
	if !cfg.TrainAttn && !cfg.TrainMLP && !cfg.TrainUnembed {
		return nil, errors.New("at least one of train_attn, train_mlp, train_unembed must be true")
	}
	if d := cfg.dtype(); d != safetensors.F32 && d != safetensors.BF16 {
		return nil, fmt.Errorf("adapter dtype must be F32 or BF16, got %s", d)
	}
	ms, targets := modules(arch, cfg)
	ac := AdapterConfig{
		AlphaPattern: map[string]int{}, BaseModelNameOrPath: arch.Name, Bias: "none", InferenceMode: true,
		InitLoraWeights: true, LoraAlpha: float64(cfg.alpha()), PeftType: "LORA", R: cfg.Rank,
		RankPattern: map[string]int{}, TargetModules: targets, TaskType: "CAUSAL_LM",
	}
	cj, err := json.MarshalIndent(ac, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode adapter config: %w", err)
	}
	cj = append(cj, '\n')
	r := int64(cfg.Rank)
	infos := make([]safetensors.TensorInfo, 0, 2*len(ms))
	keyed := make(map[string]module, 2*len(ms))
	for _, m := range ms {
		a, b := []int64{r, int64(m.in)}, []int64{int64(m.out), r}
		if m.experts > 0 {
			a = append([]int64{stackOf(m.experts, m.sharedA)}, a...)
			b = append([]int64{stackOf(m.experts, m.sharedB)}, b...)
		}
		ka, kb := "base_model.model."+m.path+".lora_A.weight", "base_model.model."+m.path+".lora_B.weight"
		infos = append(infos, safetensors.TensorInfo{Name: ka, DType: cfg.dtype(), Shape: a},
			safetensors.TensorInfo{Name: kb, DType: cfg.dtype(), Shape: b})
		keyed[ka], keyed[kb] = m, m
	}
	layout, err := safetensors.NewLayout(infos, map[string]string{"format": "pt"})
	if err != nil {
		return nil, err
	}
	return &Plan{Config: cfg, ConfigJSON: cj, Layout: layout, mods: keyed}, nil
}

// stackOf is the leading dimension of an expert factor.
func stackOf(experts int, shared bool) int64 {
	if shared {
		return 1
	}
	return int64(experts)
}

// Size is the total bytes of the checkpoint's files (config + weights; the
// marker is empty). This is what size_bytes reports.
func (p *Plan) Size() int64 { return int64(len(p.ConfigJSON)) + p.Layout.Size() }

// WriteWeights streams adapter_model.safetensors.
func (p *Plan) WriteWeights(w io.Writer) error {
	buf := make([]byte, 64<<10)
	_, err := p.Layout.WriteTo(w, func(_ int, t safetensors.TensorInfo, w io.Writer) error {
		return p.fill(t, w, buf)
	})
	return err
}

func (p *Plan) fill(t safetensors.TensorInfo, w io.Writer, buf []byte) error {
	n := t.Bytes()
	esz := int64(t.DType.Size())
	isA := strings.HasSuffix(t.Name, ".lora_A.weight")
	var next func() float32
	if isA {
		next = InitA(p.Config.Seed, t.Name, p.mods[t.Name].in)
	} else {
		clear(buf)
	}
	for n > 0 {
		chunk := min(n, int64(len(buf)))
		if isA {
			for i := int64(0); i < chunk; i += esz {
				v := next()
				if esz == 4 {
					binary.LittleEndian.PutUint32(buf[i:], math.Float32bits(v))
				} else {
					binary.LittleEndian.PutUint16(buf[i:], safetensors.Float32ToBF16(v))
				}
			}
		}
		if _, err := w.Write(buf[:chunk]); err != nil {
			return err
		}
		n -= chunk
	}
	return nil
}

// InitA returns the generator of a fresh lora_A tensor's values in
// row-major order: Kaiming-uniform U(-1/√in, 1/√in) from a PRNG seeded by
// seed and the tensor's PEFT name. The trainer starts from the same values
// that a fresh adapter checkpoint holds.
func InitA(seed uint64, tensorName string, in int) func() float32 {
	h := fnv.New64a()
	h.Write([]byte(tensorName))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	bound := 1 / math.Sqrt(float64(in))
	return func() float32 { return float32((2*rng.Float64() - 1) * bound) }
}

// WriteDir writes the three checkpoint files into dir (WriteFiles).
func (p *Plan) WriteDir(dir string) error {
	return WriteFiles(dir, []File{
		{ConfigFile, func(w io.Writer) error { _, err := w.Write(p.ConfigJSON); return err }},
		{WeightsFile, p.WriteWeights},
	})
}

// File is one file of a checkpoint directory and how to write it.
type File struct {
	Name  string
	Write func(io.Writer) error
}

// WriteFiles writes a checkpoint directory atomically: the files, each
// synced, then the checkpoint_complete marker go into a temporary sibling,
// which replaces dir only once complete (atomicfile.SwapDir: a crash never
// leaves neither copy).
func WriteFiles(dir string, files []File) error {
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("create checkpoint parent: %w", err)
	}
	// A write of the same checkpoint killed midway left its temporary
	// directory behind.
	prefix := "." + base + ".tmp-"
	atomicfile.FinishSwaps(dir)
	atomicfile.SweepStale(parent, prefix)
	td, err := atomicfile.MkdirTemp(parent, prefix)
	if err != nil {
		return fmt.Errorf("create checkpoint temp dir: %w", err)
	}
	defer td.Release()
	tmp := td.Path
	defer os.RemoveAll(tmp) // a no-op once renamed
	files = append(files, File{CompleteFile, func(io.Writer) error { return nil }})
	for _, f := range files {
		if err := writeFileSync(filepath.Join(tmp, f.Name), f.Write); err != nil {
			return err
		}
	}
	if err := atomicfile.SwapDir(td, dir); err != nil {
		return fmt.Errorf("move checkpoint into place: %w", err)
	}
	return nil
}

func writeFileSync(path string, body func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", filepath.Base(path), err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = body(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// Size computes a checkpoint's size_bytes without writing anything.
func Size(cfg Config) (int64, error) {
	p, err := NewPlan(cfg)
	if err != nil {
		return 0, err
	}
	return p.Size(), nil
}
