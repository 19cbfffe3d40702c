package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// OptimizerFile holds the AdamW state of a saved training state, next to
// the PEFT adapter files: for each adapter tensor NAME, NAME.exp_avg and
// NAME.exp_avg_sq (float32), and the step count in the metadata.
const OptimizerFile = "optimizer.safetensors"

// OptimizerState is AdamW's state: steps taken and both moments of every
// adapter tensor, by PEFT name.
type OptimizerState struct {
	Step     int64
	ExpAvg   Tensors
	ExpAvgSq Tensors
}

// Adapter returns a copy of the adapter's tensors under their PEFT names
// (lora_A [r, in], lora_B [out, r], float32, B unscaled).
func (t *Trainer) Adapter() Tensors {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.adapterTensors()
}

func (t *Trainer) adapterTensors() Tensors {
	return t.collect(func(p *param) []float32 { return p.w })
}

func (t *Trainer) collect(field func(*param) []float32) Tensors {
	ts := make(Tensors, len(t.params))
	for _, p := range t.params {
		ts[p.name] = Tensor{Shape: p.shape(), Data: slices.Clone(field(p))}
	}
	return ts
}

// Optimizer returns a copy of the optimizer state.
func (t *Trainer) Optimizer() OptimizerState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return OptimizerState{Step: t.step,
		ExpAvg:   t.collect(func(p *param) []float32 { return p.m }),
		ExpAvgSq: t.collect(func(p *param) []float32 { return p.v })}
}

// LoadAdapter replaces the adapter's values with ts (every tensor of the
// trainer's adapter, by PEFT name, nothing else). Like load_state, it
// resets the optimizer state and drops accumulated gradients.
func (t *Trainer) LoadAdapter(ts Tensors) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.check("adapter", ts); err != nil {
		return err
	}
	t.step = 0
	for _, p := range t.params {
		copy(p.w, ts[p.name].Data)
		clear(p.grad)
		clear(p.m)
		clear(p.v)
	}
	t.syncScaled()
	return nil
}

// LoadOptimizer restores the optimizer state (after LoadAdapter, for
// load_state_with_optimizer).
func (t *Trainer) LoadOptimizer(o OptimizerState) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o.Step < 0 {
		return fmt.Errorf("optimizer state: negative step count %d", o.Step)
	}
	if err := t.check("optimizer exp_avg", o.ExpAvg); err != nil {
		return err
	}
	if err := t.check("optimizer exp_avg_sq", o.ExpAvgSq); err != nil {
		return err
	}
	t.step = o.Step
	for _, p := range t.params {
		copy(p.m, o.ExpAvg[p.name].Data)
		copy(p.v, o.ExpAvgSq[p.name].Data)
	}
	return nil
}

// check verifies that ts has exactly the trainer's tensors and shapes.
func (t *Trainer) check(what string, ts Tensors) error {
	for _, p := range t.params {
		x, ok := ts[p.name]
		if !ok {
			return fmt.Errorf("%s: missing tensor %s (the adapter has rank %d and trains attn=%v mlp=%v unembed=%v)",
				what, p.name, t.cfg.Rank, t.cfg.TrainAttn, t.cfg.TrainMLP, t.cfg.TrainUnembed)
		}
		if p.experts == 1 && len(x.Shape) == 3 && x.Shape[0] == t.base.cfg.Experts && x.Shape[1] == p.rows {
			return fmt.Errorf("%s: tensor %s has one slice per expert, %v; tinker now trains the service's form, one [1, %d, %d] shared by all experts: the checkpoint samples, but training cannot resume from it",
				what, p.name, x.Shape, p.rows, p.cols)
		}
		if !slices.Equal(x.Shape, p.shape()) || len(x.Data) != p.rows*p.cols {
			return fmt.Errorf("%s: tensor %s has shape %v, want %v float32", what, p.name, x.Shape, p.shape())
		}
	}
	if len(ts) != len(t.params) {
		for _, name := range sortedKeys(ts) {
			if !slices.ContainsFunc(t.params, func(p *param) bool { return p.name == name }) {
				return fmt.Errorf("%s: tensor %s is not part of this adapter", what, name)
			}
		}
	}
	return nil
}

// AdapterConfig returns the adapter_config.json contents for this adapter
// on baseModel.
func (t *Trainer) AdapterConfig(baseModel string) peft.AdapterConfig {
	var targets []string
	if t.cfg.TrainAttn {
		targets = append(targets, t.base.cfg.attnTargets()...)
	}
	if c := t.base.cfg; t.cfg.TrainMLP {
		if c.denseLayers() > 0 || c.SharedExperts > 0 {
			targets = append(targets, "gate_proj", "up_proj", "down_proj")
		}
		if c.denseLayers() < c.Layers {
			targets = append(targets, "w1", "w2", "w3")
		}
	}
	if t.cfg.TrainUnembed {
		targets = append(targets, "lm_head")
	}
	return peft.AdapterConfig{AlphaPattern: map[string]int{}, BaseModelNameOrPath: baseModel, Bias: "none",
		InferenceMode: true, InitLoraWeights: true, LoraAlpha: t.cfg.Alpha, PeftType: "LORA", R: t.cfg.Rank,
		RankPattern: map[string]int{}, TargetModules: targets, TaskType: "CAUSAL_LM"}
}

// WriteAdapterWeights writes adapter_model.safetensors (float32).
func (t *Trainer) WriteAdapterWeights(w io.Writer) error {
	return writeTensors(w, t.Adapter(), nil)
}

// WriteOptimizer writes the optimizer state file (OptimizerFile).
func (t *Trainer) WriteOptimizer(w io.Writer) error {
	o := t.Optimizer()
	ts := make(Tensors, 2*len(o.ExpAvg))
	for name, x := range o.ExpAvg {
		ts[name+".exp_avg"] = x
		ts[name+".exp_avg_sq"] = o.ExpAvgSq[name]
	}
	return writeTensors(w, ts, map[string]string{"step": strconv.FormatInt(o.Step, 10)})
}

func writeTensors(w io.Writer, ts Tensors, meta map[string]string) error {
	out := make([]safetensors.Tensor, 0, len(ts))
	for _, name := range sortedKeys(ts) {
		x := ts[name]
		data, err := safetensors.EncodeFloat32(safetensors.F32, x.Data)
		if err != nil {
			return err
		}
		shape := make([]int64, len(x.Shape))
		for i, d := range x.Shape {
			shape[i] = int64(d)
		}
		out = append(out, safetensors.Tensor{Name: name, DType: safetensors.F32, Shape: shape, Data: data})
	}
	if meta == nil {
		meta = map[string]string{}
	}
	meta["format"] = "pt"
	return safetensors.Write(w, out, meta)
}

// WriteStateDir saves the adapter in the PEFT layout (float32) into dir,
// with the optimizer state when withOptimizer. The files go to a temporary
// sibling renamed into place, the checkpoint_complete marker last.
func (t *Trainer) WriteStateDir(dir, baseModel string, withOptimizer bool) error {
	files, err := t.stateFiles(baseModel, withOptimizer)
	if err == nil {
		err = peft.WriteFiles(dir, files)
	}
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}

// stateFiles are the files of a saved state.
func (t *Trainer) stateFiles(baseModel string, withOptimizer bool) ([]peft.File, error) {
	cj, err := json.MarshalIndent(t.AdapterConfig(baseModel), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode adapter config: %w", err)
	}
	files := []peft.File{
		{Name: peft.ConfigFile, Write: func(w io.Writer) error { _, err := w.Write(append(cj, '\n')); return err }},
		{Name: peft.WeightsFile, Write: t.WriteAdapterWeights},
	}
	if withOptimizer {
		files = append(files, peft.File{Name: OptimizerFile, Write: t.WriteOptimizer})
	}
	return files, nil
}

// ReadLoRAConfig reads the shape of a saved adapter (rank, alpha and which
// matrices it trains) from its adapter_config.json, to create a trainer
// that LoadStateDir can fill.
func ReadLoRAConfig(dir string) (LoRAConfig, error) {
	b, err := os.ReadFile(filepath.Join(dir, peft.ConfigFile))
	if err != nil {
		return LoRAConfig{}, fmt.Errorf("read adapter config: %w", err)
	}
	var ac peft.AdapterConfig
	if err := json.Unmarshal(b, &ac); err != nil {
		return LoRAConfig{}, fmt.Errorf("parse %s: %w", peft.ConfigFile, err)
	}
	c := LoRAConfig{Rank: ac.R, Alpha: ac.LoraAlpha}
	for _, m := range ac.TargetModules {
		switch m {
		case "q_proj", "k_proj", "v_proj", "o_proj", "q_a_proj", "kv_a_proj_with_mqa":
			c.TrainAttn = true
		case "gate_proj", "up_proj", "down_proj", "w1", "w2", "w3":
			c.TrainMLP = true
		case "lm_head":
			c.TrainUnembed = true
		default:
			return LoRAConfig{}, fmt.Errorf("%s: target module %q cannot be trained by the local engine", peft.ConfigFile, m)
		}
	}
	if ac.UseRslora {
		return LoRAConfig{}, fmt.Errorf("%s: rsLoRA adapters cannot be trained by the local engine", peft.ConfigFile)
	}
	return c, nil
}

// LoadStateDir loads a state saved by WriteStateDir (or any PEFT adapter of
// the same shape): the adapter, and the optimizer state when
// withOptimizer (which then must be present). Without it the optimizer
// state is reset, as load_state does.
func (t *Trainer) LoadStateDir(dir string, withOptimizer bool) error {
	a, err := peft.ReadDir(dir, false)
	if err != nil {
		return fmt.Errorf("load state: %w", err)
	}
	defer a.Close()
	if a.Config.R != t.cfg.Rank || a.Config.LoraAlpha != t.cfg.Alpha {
		return fmt.Errorf("load state: checkpoint has rank %d and alpha %v, the model has rank %d and alpha %v",
			a.Config.R, a.Config.LoraAlpha, t.cfg.Rank, t.cfg.Alpha)
	}
	ts := Tensors{}
	for mod, p := range a.Modules {
		for suffix, st := range map[string]*safetensors.Tensor{".lora_A.weight": p.A, ".lora_B.weight": p.B} {
			x, err := toTensor(st)
			if err != nil {
				return fmt.Errorf("load state: %w", err)
			}
			ts["base_model.model."+mod+suffix] = x
		}
	}
	var o OptimizerState
	if withOptimizer {
		f, err := safetensors.ReadFile(filepath.Join(dir, OptimizerFile))
		if err != nil {
			return fmt.Errorf("load state: optimizer state: %w", err)
		}
		defer f.Close()
		step, err := strconv.ParseInt(f.Metadata["step"], 10, 64)
		if err != nil {
			return fmt.Errorf("load state: %s: bad step %q", OptimizerFile, f.Metadata["step"])
		}
		o = OptimizerState{Step: step, ExpAvg: Tensors{}, ExpAvgSq: Tensors{}}
		for i := range f.Tensors {
			st := &f.Tensors[i]
			x, err := toTensor(st)
			if err != nil {
				return fmt.Errorf("load state: %s: %w", OptimizerFile, err)
			}
			if name, ok := strings.CutSuffix(st.Name, ".exp_avg_sq"); ok {
				o.ExpAvgSq[name] = x
			} else if name, ok := strings.CutSuffix(st.Name, ".exp_avg"); ok {
				o.ExpAvg[name] = x
			} else {
				return fmt.Errorf("load state: %s: unexpected tensor %s", OptimizerFile, st.Name)
			}
		}
	}
	if err := t.LoadAdapter(ts); err != nil {
		return fmt.Errorf("load state: %w", err)
	}
	if withOptimizer {
		if err := t.LoadOptimizer(o); err != nil {
			return fmt.Errorf("load state: %w", err)
		}
	}
	return nil
}
